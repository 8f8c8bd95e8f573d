"""The programs' shared input and placement helpers (`applications/_shared/`
batches.py, distribute.py, serving.py, tensorflow_input.py), one by one:
the multi-process flags and each refusal word for word; the placement on
JAX and TensorFlow against stand-ins of their distribution APIs (the
calls recorded, no devices needed, so every backend runs them); the
replicas a held-out batch is padded for; the weights' digest by hashlib;
batches in a (seed, epoch) order split between processes, counted by
hand; and the quantized copies of a two-layer model.

Cost per backend: about a second (one small model quantized).
"""

import argparse
import contextlib
import hashlib
import types
import warnings

import keras
import numpy as np
import pytest
from _shared import batches
from _shared import distribute
from _shared import files
from _shared import interrupt
from _shared import serving
from _shared import tensorflow_input


class Refused(Exception):
    pass


class RaisingParser(argparse.ArgumentParser):
    """A parser whose errors are raised, to be asserted whole."""

    def error(self, message):
        raise Refused(message)


def distribute_parser(input_shards=False):
    parser = RaisingParser()
    group = parser.add_argument_group("g")
    if input_shards:
        distribute.add_distribute_flags(group, input_shards)
    else:  # the image program's call: no --input-shards by default
        distribute.add_distribute_flags(group)
    return parser


def checked(argv, batch_size=None, input_shards=False):
    parser = distribute_parser(input_shards)
    args = parser.parse_args(argv)
    args.batch_size = batch_size
    distribute.check_distribute_flags(parser, args)
    return args


def refusal(argv, batch_size=None, input_shards=False):
    with pytest.raises(Refused) as raised:
        checked(argv, batch_size, input_shards)
    return str(raised.value)


@pytest.fixture(autouse=True)
def no_process_joins(monkeypatch):
    """No test joins other processes for real: a changed condition (the
    mutation run's) reaching JAX's runtime would wait for peers."""

    def initialize(*args, **kwargs):
        raise AssertionError(f"keras.distribution.initialize{args}")

    monkeypatch.setattr(keras.distribution, "initialize", initialize)


@pytest.fixture
def no_distribution_environment(monkeypatch):
    for name in distribute.ENVIRONMENT.values():
        monkeypatch.delenv(name, raising=False)


# --- the flags -----------------------------------------------------------


@pytest.mark.backend_independent
def test_distribute_flags_help_and_defaults():
    parser = distribute_parser(input_shards=True)
    actions = {a.dest: a for a in parser._actions if a.dest != "help"}
    assert actions["distribute"].choices == ("none", "data", "model")
    assert actions["distribute"].help == (
        "'data' replicates the model on every device of every process "
        "(JAX keras.distribution.DataParallel; TensorFlow MirroredStrategy in "
        "one process); 'model' (JAX, one process) also shards the MLPs "
        "(keras_gmlp.distribution.ModelParallel)"
    )
    assert actions["model_shards"].help == (
        "devices each model is sharded over with --distribute model (default: all)"
    )
    assert actions["coordinator"].help == (
        "a multi-process run's HOST:PORT of process 0, or every process's, "
        "comma-separated, process 0 first (JAX; default: "
        "$KERAS_DISTRIBUTION_JOB_ADDRESSES)"
    )
    assert actions["num_processes"].help == (
        "processes of a multi-process run (default: "
        "$KERAS_DISTRIBUTION_NUM_PROCESSES, else 1)"
    )
    assert actions["process_id"].help == (
        "this process's index, 0 to --num-processes - 1; process 0 writes the "
        "outputs (default: $KERAS_DISTRIBUTION_PROCESS_ID)"
    )
    assert actions["input_shards"].help == (
        "shards of the train input, read by the processes in turn; a run with "
        "the same number trains on the same batches with any number of "
        "processes (default: one per process)"
    )
    assert vars(parser.parse_args([])) == {
        "distribute": "none",
        "model_shards": None,
        "coordinator": None,
        "num_processes": None,
        "process_id": None,
        "input_shards": None,
    }
    assert "input_shards" not in vars(distribute_parser().parse_args([]))
    args = parser.parse_args(["--process-id", "0", "--model-shards", "1"])
    assert (args.process_id, args.model_shards) == (0, 1)
    for flag, text in [
        ("--model-shards", "0"),
        ("--num-processes", "0"),
        ("--input-shards", "0"),
        ("--process-id", "-1"),
        ("--distribute", "all"),
    ]:
        with pytest.raises(Refused, match=f"^argument {flag}: "):
            parser.parse_args([flag, text])


@pytest.mark.backend_independent
def test_one_process_is_process_0_and_an_empty_variable_is_not_read(
    no_distribution_environment, monkeypatch
):
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "")
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "")
    args = checked(["--distribute", "data"], batch_size=5, input_shards=True)
    assert (args.num_processes, args.process_id, args.coordinator) == (1, 0, None)
    assert args.input_shards == 1
    # One process is process 0, whatever --process-id said.
    args = checked(["--num-processes", "1", "--process-id", "3"])
    assert (args.num_processes, args.process_id) == (1, 0)
    assert not hasattr(args, "input_shards")


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "name, text, kind",
    [
        ("KERAS_DISTRIBUTION_NUM_PROCESSES", "four", "int"),
        ("KERAS_DISTRIBUTION_PROCESS_ID", "1.5", "int"),
    ],
)
def test_a_bad_environment_variable_is_refused_whole(
    no_distribution_environment, monkeypatch, name, text, kind
):
    monkeypatch.setenv(name, text)
    assert refusal(["--distribute", "data"]) == (
        f"${name} must be {kind}; received {text!r}"
    )


MULTI = ["--distribute", "data", "--num-processes", "4"]


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "argv, batch_size, input_shards, message",
    [
        (
            ["--model-shards", "2", "--distribute", "data"],
            None,
            False,
            "--model-shards needs --distribute model",
        ),
        (
            ["--num-processes", "2", "--process-id", "0", "--coordinator", "h:1"],
            None,
            False,
            "--num-processes 2 needs --distribute data (received --distribute "
            "none): the processes train replicas of one model",
        ),
        (
            [*MULTI, "--process-id", "0"],
            None,
            False,
            "a multi-process run needs --coordinator HOST:PORT and --process-id "
            "(or their environment variables) in every process",
        ),
        (
            [*MULTI, "--coordinator", "h:1"],
            None,
            False,
            "a multi-process run needs --coordinator HOST:PORT and --process-id "
            "(or their environment variables) in every process",
        ),
        (
            [*MULTI, "--coordinator", "h:1", "--process-id", "4"],
            None,
            False,
            "--process-id 4 must be from 0 to below --num-processes 4",
        ),
        (
            [*MULTI, "--coordinator", "h:123456", "--process-id", "0"],
            None,
            False,
            "--coordinator takes HOST:PORT[,HOST:PORT...]; received 'h:123456'",
        ),
        (
            [*MULTI, "--coordinator", "h h:1", "--process-id", "0"],
            None,
            False,
            "--coordinator takes HOST:PORT[,HOST:PORT...]; received 'h h:1'",
        ),
        (
            [*MULTI, "--coordinator", "h:1,h:", "--process-id", "0"],
            None,
            False,
            "--coordinator takes HOST:PORT[,HOST:PORT...]; received 'h:1,h:'",
        ),
        (
            [*MULTI, "--coordinator", "a:1,b:2", "--process-id", "0"],
            None,
            False,
            "--coordinator lists 2 addresses: give process 0's, or all 4",
        ),
        (
            [*MULTI, "--coordinator", "h:1", "--process-id", "0"],
            6,
            False,
            "--batch-size 6 (the global batch) must be a multiple of the 4 processes",
        ),
        (
            [*MULTI, "--coordinator", "h:1", "--process-id", "0"]
            + ["--input-shards", "8"],
            12,
            True,
            "--batch-size 12 (the global batch) must be a multiple of the 8 "
            "input shards",
        ),
        (
            [*MULTI, "--coordinator", "h:1", "--process-id", "0"]
            + ["--input-shards", "6"],
            None,
            True,
            "--input-shards 6 must be a multiple of --num-processes 4: each "
            "process reads the same number",
        ),
    ],
)
def test_each_distribute_refusal_is_whole(
    no_distribution_environment, argv, batch_size, input_shards, message
):
    assert refusal(argv, batch_size, input_shards) == message


@pytest.mark.backend_independent
def test_accepted_multi_process_flags(no_distribution_environment):
    for coordinator in ("h:1", "10.0.0.1:65535", "a:1,b:2,c:3,d:4"):
        for process_id in ("0", "3"):
            args = checked(
                [*MULTI, "--coordinator", coordinator, "--process-id", process_id],
                batch_size=8,
                input_shards=True,
            )
            assert (args.num_processes, args.process_id) == (4, int(process_id))
            assert args.input_shards == 4
    args = checked(
        [*MULTI, "--coordinator", "h:1", "--process-id", "1", "--input-shards", "8"],
        batch_size=16,
        input_shards=True,
    )
    assert args.input_shards == 8
    args = checked(["--distribute", "model", "--model-shards", "2"], batch_size=3)
    assert args.model_shards == 2
    # Without input shards the processes divide the batch.
    assert checked([*MULTI, "--coordinator", "h:1", "--process-id", "2"], 4)


# --- the placement -------------------------------------------------------


def start_args(distribute_as="data", processes=1, process_id=0, **kw):
    values = dict(
        distribute=distribute_as,
        num_processes=processes,
        process_id=process_id,
        coordinator="h:1" if processes > 1 else None,
        model_shards=None,
        batch_size=8,
    )
    return types.SimpleNamespace(**{**values, **kw})


def fake_keras_distribution(monkeypatch, devices=4):
    """keras.distribution's calls recorded; returns the record."""
    calls = []
    names = [f"device:{i}" for i in range(devices)]

    def recorder(name, result=None):
        def record(*args, **kwargs):
            calls.append((name, args, kwargs))
            return result if result is not None else (name, args, kwargs)

        return record

    for name in ("initialize", "set_distribution", "DataParallel", "DeviceMesh"):
        monkeypatch.setattr(keras.distribution, name, recorder(name))
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: names)
    import keras_gmlp.distribution

    monkeypatch.setattr(
        keras_gmlp.distribution, "get_layout_map", recorder("get_layout_map")
    )
    monkeypatch.setattr(
        keras_gmlp.distribution, "ModelParallel", recorder("ModelParallel")
    )
    return calls, names


@pytest.fixture
def on_jax(monkeypatch):
    jax = pytest.importorskip("jax")
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    updates = []
    monkeypatch.setattr(jax.config, "update", lambda *a: updates.append(a))
    # What start changes in a multi-process run, restored after.
    monkeypatch.setattr(files, "_WRITER", [True])
    monkeypatch.setattr(interrupt, "PROCESSES", None)
    return updates


def test_no_distribution_is_one_device_on_any_backend(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    placement = distribute.start(RaisingParser(), start_args("none"))
    assert placement.description is None and placement.strategy is None
    assert isinstance(placement.scope(), contextlib.nullcontext)


def test_pytorch_is_refused_whole(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    with pytest.raises(Refused) as raised:
        distribute.start(RaisingParser(), start_args("model"))
    assert str(raised.value) == (
        "--distribute model runs on the JAX and TensorFlow backends (several "
        "processes on JAX); this is torch (set KERAS_BACKEND)"
    )


def test_jax_data_parallel_in_one_process(monkeypatch, on_jax):
    calls, names = fake_keras_distribution(monkeypatch)
    placement = distribute.start(RaisingParser(), start_args())
    parallel = ("DataParallel", (), {"devices": names, "auto_shard_dataset": True})
    assert calls == [parallel, ("set_distribution", (parallel,), {})]
    assert placement.description == "data over 4 devices"
    assert isinstance(placement.scope(), contextlib.nullcontext)
    assert on_jax == [] and files.is_writer() and interrupt.PROCESSES is None


@pytest.mark.parametrize("auto_shard", [False, True])
@pytest.mark.parametrize("process_id", [0, 1])
def test_jax_processes_join_then_replicate(monkeypatch, on_jax, auto_shard, process_id):
    calls, names = fake_keras_distribution(monkeypatch)
    args = start_args(processes=2, process_id=process_id)
    if auto_shard:
        placement = distribute.start(RaisingParser(), args, auto_shard=True)
    else:  # each process feeds its own batches by default
        placement = distribute.start(RaisingParser(), args)
    parallel = (
        "DataParallel",
        (),
        {"devices": names, "auto_shard_dataset": auto_shard},
    )
    assert calls == [
        ("initialize", ("h:1", 2, process_id), {}),
        parallel,
        ("set_distribution", (parallel,), {}),
    ]
    assert on_jax == [("jax_cpu_collectives_implementation", "gloo")]
    assert files.is_writer() == (process_id == 0)
    assert interrupt.PROCESSES == (process_id, 2)
    assert placement.description == (
        f"data over 4 devices in 2 processes (this is process {process_id})"
    )


@pytest.mark.parametrize("shards, replicas", [(2, 2), (None, 1), (4, 1), (1, 4)])
def test_jax_model_parallel_mesh(monkeypatch, on_jax, shards, replicas):
    calls, names = fake_keras_distribution(monkeypatch)
    args = start_args("model", model_shards=shards, batch_size=4)
    placement = distribute.start(RaisingParser(), args)
    mesh = ("DeviceMesh", ((replicas, 4 // replicas), ("batch", "model"), names), {})
    layout = ("get_layout_map", (mesh,), {})
    parallel = ("ModelParallel", (), {"layout_map": layout, "batch_dim_name": "batch"})
    assert calls == [mesh, layout, parallel, ("set_distribution", (parallel,), {})]
    assert placement.description == "model over 4 devices"


@pytest.mark.parametrize(
    "distribute_as, shards, batch_size, message",
    [
        ("model", 3, 8, "--model-shards 3 does not divide the 4 devices"),
        (
            "model",
            2,
            3,
            "--batch-size 3 is not a multiple of the 2 data-parallel replicas "
            "of --distribute model",
        ),
        (
            "data",
            None,
            6,
            "--batch-size 6 is not a multiple of the 4 data-parallel replicas "
            "of --distribute data",
        ),
    ],
)
def test_jax_refusals_are_whole(
    monkeypatch, on_jax, distribute_as, shards, batch_size, message
):
    calls, _ = fake_keras_distribution(monkeypatch)
    args = start_args(distribute_as, model_shards=shards, batch_size=batch_size)
    with pytest.raises(Refused) as raised:
        distribute.start(RaisingParser(), args)
    assert str(raised.value) == message
    assert "set_distribution" not in [call[0] for call in calls]


def fake_tensorflow_devices(monkeypatch, gpus, cpus):
    tf = pytest.importorskip("tensorflow")
    monkeypatch.setattr(keras.backend, "backend", lambda: "tensorflow")
    devices = {"GPU": gpus, "CPU": cpus}
    monkeypatch.setattr(
        tf.config,
        "list_logical_devices",
        lambda kind: [types.SimpleNamespace(name=n) for n in devices[kind]],
    )

    class Strategy:
        def __init__(self, names):
            self.names = names
            self.num_replicas_in_sync = len(names)

        def scope(self):
            return ("scope of", self)

    monkeypatch.setattr(tf.distribute, "MirroredStrategy", Strategy)


@pytest.mark.parametrize(
    "gpus, cpus, expected",
    [
        (["/gpu:0", "/gpu:1"], ["/cpu:0"], ["/gpu:0", "/gpu:1"]),
        ([], ["/cpu:0"], ["/cpu:0"]),
    ],
)
def test_tensorflow_mirrors_over_the_gpus_else_the_cpu(
    monkeypatch, gpus, cpus, expected
):
    fake_tensorflow_devices(monkeypatch, gpus, cpus)
    placement = distribute.start(RaisingParser(), start_args())
    assert placement.strategy.names == expected
    assert placement.scope() == ("scope of", placement.strategy)
    assert placement.description == f"data over {len(expected)} devices"


@pytest.mark.parametrize(
    "args, message",
    [
        (
            start_args("model"),
            "--distribute model shards with JAX's keras.distribution "
            "(KERAS_BACKEND=jax); on TensorFlow use --distribute data",
        ),
        (
            start_args(processes=2),
            "--num-processes 2 runs on JAX (KERAS_BACKEND=jax, "
            "keras.distribution.initialize); Keras 3's TensorFlow trainer cannot "
            "fit under MultiWorkerMirroredStrategy (keras-team/keras#20585)",
        ),
        (
            start_args(batch_size=3),
            "--batch-size 3 is not a multiple of the 2 data-parallel replicas "
            "of --distribute data",
        ),
    ],
)
def test_tensorflow_refusals_are_whole(monkeypatch, args, message):
    fake_tensorflow_devices(monkeypatch, ["/gpu:0", "/gpu:1"], ["/cpu:0"])
    monkeypatch.setattr(files, "_WRITER", [True])
    monkeypatch.setattr(interrupt, "PROCESSES", None)
    with pytest.raises(Refused) as raised:
        distribute.start(RaisingParser(), args)
    assert str(raised.value) == message


# --- after training: replicas, copies, digests, barriers ----------------


def held_out():
    return {"ids": np.arange(10).reshape(5, 2)}, np.arange(5)


@pytest.mark.parametrize("distributed, rows", [(False, 5), (True, 8)])
def test_jax_replicas_pad_held_out_arrays(monkeypatch, distributed, rows):
    jax = pytest.importorskip("jax")
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(
        keras.distribution,
        "distribution",
        lambda: "a distribution" if distributed else None,
    )
    monkeypatch.setattr(jax, "local_device_count", lambda: 4)
    x, y = held_out()
    padded_x, padded_y, weights = distribute.evaluation_data(x, y)
    assert len(padded_x["ids"]) == len(padded_y) == rows
    if not distributed:
        assert padded_x is x and weights is None
    else:
        # 5 rows on 4 replicas: 3 copies of the first, weighted 0.
        np.testing.assert_array_equal(padded_y, [0, 1, 2, 3, 4, 0, 0, 0])
        np.testing.assert_array_equal(weights, [1] * 5 + [0] * 3)
        assert weights.dtype == np.float32


@pytest.mark.parametrize("backend, replicas", [("tensorflow", 3), ("torch", 1)])
def test_the_strategy_replicas_pad_held_out_arrays(monkeypatch, backend, replicas):
    tf = pytest.importorskip("tensorflow")
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    monkeypatch.setattr(
        tf.distribute,
        "get_strategy",
        lambda: types.SimpleNamespace(num_replicas_in_sync=3),
    )
    x, y = held_out()
    padded_x, padded_y, weights = distribute.evaluation_data(x, y, ignored_label=-1)
    assert len(padded_x["ids"]) == {3: 6, 1: 5}[replicas]
    assert weights is None
    if replicas == 3:
        np.testing.assert_array_equal(padded_y, [0, 1, 2, 3, 4, -1])
        np.testing.assert_array_equal(padded_x["ids"][5], [0, 1])


def small_model():
    """Functional, as the programs' models: a Sequential's variable paths
    start with its name, which a copy from its config does not keep."""
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="hidden")(inputs)
    hidden = keras.layers.LayerNormalization(name="norm")(hidden)
    outputs = keras.layers.Dense(2, name="predictions")(hidden)
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(size=w.shape) for w in model.get_weights()])
    return model


def test_local_copy_is_the_model_unless_jax_runs_several_processes(monkeypatch):
    jax = pytest.importorskip("jax")
    model = object()
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    assert distribute.local_copy(model) is model
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(jax, "process_count", lambda: 1)
    assert distribute.local_copy(model) is model


@pytest.mark.parametrize("preprocessor", [None, "a tokenizer"])
def test_local_copy_of_a_multi_process_run(monkeypatch, capsys, preprocessor):
    jax = pytest.importorskip("jax")
    model = small_model()
    if preprocessor:
        model.preprocessor = preprocessor
    weights = [np.asarray(w) for w in model.get_weights()]
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    distributions = ["a distribution"]
    monkeypatch.setattr(keras.distribution, "distribution", lambda: distributions[-1])
    monkeypatch.setattr(keras.distribution, "set_distribution", distributions.append)
    copy = distribute.local_copy(model)
    assert copy is not model and type(copy) is type(model)
    for copied, weight in zip(copy.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(copied, weight)
    assert getattr(copy, "preprocessor", None) == preprocessor
    # The distribution ended, once; the digest printed then only.
    assert distributions == ["a distribution", None]
    digest = hashlib.sha256(b"".join(w.tobytes() for w in weights)).hexdigest()
    assert capsys.readouterr().out == (
        f"Process 1 of 2: weights SHA-256 {digest[:16]}\n"
    )
    distribute.local_copy(model)
    assert distributions == ["a distribution", None]
    assert capsys.readouterr().out == ""


def test_local_copy_refuses_a_model_whose_rebuilt_weights_are_named_otherwise(
    monkeypatch,
):
    """A Sequential model's rebuilt weights lose its name from their paths
    ("sequential/dense/kernel" becomes "dense/kernel"): matched by path,
    the copy would keep random weights."""
    jax = pytest.importorskip("jax")
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dropout(0.5)]
    )
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(keras.distribution, "distribution", lambda: None)
    with pytest.raises(ValueError, match=r"local_copy: .*'sequential/dense/bias'"):
        distribute.local_copy(model)


def test_a_tied_weight_rebuilt_as_two_takes_its_value_twice():
    """The masked LM's head shares the backbone's embedding; rebuilt from
    its config, the two are separate weights with one path. The seed
    generators' states, named by a process-wide count, are not compared."""
    copy = keras.layers.Layer()
    copy.first = keras.layers.Embedding(5, 2, name="embedding")
    copy.second = keras.layers.Embedding(5, 2, name="embedding")
    copy.first.build((None,))
    copy.second.build((None,))
    copy.seeds = keras.random.SeedGenerator(1)
    value = np.arange(10.0).reshape(5, 2)
    distribute.assign_by_path(copy, {"embedding/embeddings": value})
    for layer in (copy.first, copy.second):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(layer.embeddings), value
        )


def test_weights_digest_of_c_ordered_bytes(capsys):
    jax = pytest.importorskip("jax")
    arrays = [np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.int8([1, 2])]
    distribute.print_weights_digest(arrays)
    expected = hashlib.sha256(np.arange(6.0).tobytes() + bytes([1, 2])).hexdigest()[:16]
    assert capsys.readouterr().out == (
        f"Process {jax.process_index()} of {jax.process_count()}: weights "
        f"SHA-256 {expected}\n"
    )


@pytest.mark.parametrize(
    "backend, processes, synced",
    [("jax", 2, ["trained"]), ("jax", 1, []), ("torch", 2, [])],
)
def test_barrier_syncs_jax_processes_only(monkeypatch, backend, processes, synced):
    jax = pytest.importorskip("jax")
    from jax.experimental import multihost_utils

    names = []
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    monkeypatch.setattr(jax, "process_count", lambda: processes)
    monkeypatch.setattr(multihost_utils, "sync_global_devices", names.append)
    distribute.barrier("trained")
    assert names == synced


# --- batches -------------------------------------------------------------


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "size, batch_size, parts, expected",
    [
        (12, 6, 1, 2),  # no partial batch
        (13, 6, 1, 3),  # one row left: a batch of one
        (14, 6, 2, 3),  # two rows left, one each
        (14, 6, 3, 2),  # two rows left for three processes: left out
        (15, 6, 3, 3),
        (5, 6, 1, 1),
    ],
)
def test_batches_per_epoch(size, batch_size, parts, expected):
    for part in range(parts):
        data = batches.EpochSeededBatches(
            np.arange(size), batch_size=batch_size, share=(part, parts)
        )
        assert len(data) == expected


@pytest.mark.backend_independent
def test_each_process_takes_its_part_of_every_batch_in_order():
    x = {"a": np.arange(14), "b": (np.arange(14) * 10,)}
    y = np.arange(14) + 100
    data = batches.EpochSeededBatches(x, y, batch_size=6, shuffle=False, share=(1, 2))
    assert len(data) == 3
    expected = [[3, 4, 5], [9, 10, 11], [13]]
    for index, rows in enumerate(expected):
        taken_x, taken_y = data[index]
        np.testing.assert_array_equal(taken_x["a"], rows)
        np.testing.assert_array_equal(taken_x["b"][0], np.multiply(rows, 10))
        np.testing.assert_array_equal(taken_y, np.add(rows, 100))


@pytest.mark.backend_independent
def test_batches_follow_seed_and_epoch_only():
    def epoch_rows(seed, epoch, share=(0, 1)):
        data = batches.EpochSeededBatches(
            np.arange(20), batch_size=4, seed=seed, share=share
        )
        data.epoch_callback().on_epoch_begin(epoch)
        assert data.epoch == epoch
        return [data[i][0] for i in range(len(data))]

    # Before any epoch callback (Keras may take a batch to build the
    # model): epoch 0's order.
    fresh = batches.EpochSeededBatches(np.arange(20), batch_size=4, seed=7)
    np.testing.assert_array_equal(fresh[0][0], epoch_rows(7, 0)[0])
    first = np.concatenate(epoch_rows(7, 2))
    # Every row once, not in order; again the same for the same (seed, epoch).
    np.testing.assert_array_equal(np.sort(first), np.arange(20))
    assert not np.array_equal(first, np.arange(20))
    np.testing.assert_array_equal(np.concatenate(epoch_rows(7, 2)), first)
    for seed, epoch in ((7, 3), (8, 2)):
        assert not np.array_equal(np.concatenate(epoch_rows(seed, epoch)), first)
    # Two processes' parts of each batch make up the batch.
    halves = [epoch_rows(7, 2, (part, 2)) for part in (0, 1)]
    whole = [np.concatenate(parts) for parts in zip(*halves, strict=True)]
    np.testing.assert_array_equal(np.concatenate(whole), first)


@pytest.mark.backend_independent
def test_batches_of_32_in_seed_0s_order_by_default():
    data = batches.EpochSeededBatches(np.arange(70))
    assert [len(data[i][0]) for i in range(len(data))] == [32, 32, 6]
    seeded = batches.EpochSeededBatches(np.arange(70), batch_size=32, seed=0)
    np.testing.assert_array_equal(data[0][0], seeded[0][0])


@pytest.mark.backend_independent
def test_in_order_batches_of_arrays():
    x, y = np.arange(10).reshape(5, 2), np.arange(5)
    data = batches.in_order(x, y, batch_size=2)
    assert len(data) == 3 and not data.shuffle
    taken = [data[i] for i in range(3)]
    np.testing.assert_array_equal(np.concatenate([t[0] for t in taken]), x)
    np.testing.assert_array_equal(np.concatenate([t[1] for t in taken]), y)
    np.testing.assert_array_equal(taken[2][1], [4])


# --- quantized copies ----------------------------------------------------


def no_quantize_warnings(caught):
    return not [w for w in caught if "quantize" in str(w.message)]


def test_quantize_in_place_keeps_the_named_layers_float():
    model = small_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serving.quantize_in_place(model, "int8", keep=("predictions",))
    assert no_quantize_warnings(caught)
    modes = {layer.name: layer.quantization_mode for layer in model.layers[1:]}
    assert modes == {"hidden": "int8", "norm": None, "predictions": None}


def warn_twice(*args, **kwargs):
    warnings.warn("a layer left float", UserWarning, stacklevel=2)
    warnings.warn("something else", DeprecationWarning, stacklevel=2)


def test_only_the_layers_left_float_go_unwarned(monkeypatch):
    """Keras' UserWarnings of the layers it leaves in float are silenced;
    any other warning still shows."""
    model = small_model()
    monkeypatch.setattr(model, "quantize", warn_twice)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serving.quantize_in_place(model, "int8")
    shown = [str(w.message) for w in caught]
    assert "something else" in shown and "a layer left float" not in shown
    monkeypatch.setattr(type(model), "quantize", warn_twice)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serving.quantized_copy(model, "int8")
    shown = [str(w.message) for w in caught]
    assert "something else" in shown and "a layer left float" not in shown


@pytest.mark.parametrize("preprocessor", [None, "a preprocessor"])
def test_quantized_copy_leaves_the_model_float(preprocessor):
    model = small_model()
    if preprocessor:
        model.preprocessor = preprocessor
    x = np.random.default_rng(1).normal(size=(3, 4)).astype("float32")
    expected = keras.ops.convert_to_numpy(model(x))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        copy = serving.quantized_copy(model, "int8")
    assert no_quantize_warnings(caught)
    assert [layer.quantization_mode for layer in model.layers[1:]] == [None] * 3
    modes = [layer.quantization_mode for layer in copy.layers[1:]]
    assert modes == ["int8", None, "int8"]
    assert getattr(copy, "preprocessor", None) == preprocessor
    np.testing.assert_allclose(keras.ops.convert_to_numpy(copy(x)), expected, atol=0.1)


@pytest.mark.parametrize("tokenizer", [None, "a tokenizer"])
def test_gptq_copy_is_configured_from_the_calibration_windows(monkeypatch, tokenizer):
    model = small_model()
    if tokenizer:
        model.preprocessor = types.SimpleNamespace(tokenizer=tokenizer)
    configs, quantized = [], []
    real_config = keras.quantizers.GPTQConfig

    def recorded_config(**kwargs):
        configs.append(dict(kwargs))
        quantized.append(real_config(**kwargs))
        return quantized[-1]

    monkeypatch.setattr(keras.quantizers, "GPTQConfig", recorded_config)
    monkeypatch.setattr(
        type(model),
        "quantize",
        lambda self, mode, config=None: quantized.append((self, mode, config)),
    )
    calibration = np.zeros((3, 5), dtype="int32")
    copy = serving.quantized_copy(model, "gptq", calibration)
    config_made, quantize_call = quantized
    assert quantize_call == (copy, "gptq", config_made) and copy is not model
    (config,) = configs
    assert config.pop("dataset") is calibration
    given = config.pop("tokenizer")
    if tokenizer:
        assert given == tokenizer
    else:
        assert given("some text") == "some text"
    assert config == {
        "weight_bits": 4,
        "num_samples": 3,
        "sequence_length": 5,
        "group_size": 128,
    }


# --- TensorFlow's GPUs ---------------------------------------------------


def test_tensorflow_started_already_keeps_its_gpus(monkeypatch, capsys):
    tf = pytest.importorskip("tensorflow")

    def started(devices, device_type=None):
        raise RuntimeError("Visible devices cannot be modified")

    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(tf.config, "set_visible_devices", started)
    assert tensorflow_input.keep_tensorflow_off_gpus() is False
    assert capsys.readouterr().err == (
        "TensorFlow keeps its GPUs: Visible devices cannot be modified\n"
    )
