"""Training on several devices and processes: the flags (parsed with the
standard library only), the backend's set-up, and what each process does.

- JAX: `keras.distribution` (`DataParallel`, or `ModelParallel` with the
  library's layout map) over every device of every process. Several
  processes join with `keras.distribution.initialize` (JAX's distributed
  runtime; on CPUs its collectives run over gloo).
- TensorFlow: `tf.distribute.MirroredStrategy` over the local devices of
  one process (several processes: see `_start_tensorflow`).
- PyTorch: refused in one line; Keras distributes only JAX and TensorFlow.

Each process reads its own shards of the input and trains on its share of
every global batch (--batch-size is the global batch). Only process 0
writes outputs (`files.set_writer`); every process keeps its own input
position beside the shared checkpoints, so all of them resume together.
"""

import os
import re

DISTRIBUTE_CHOICES = ("none", "data", "model")
# keras.distribution.initialize reads these when no flag is given.
ENVIRONMENT = {
    "coordinator": "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "num_processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "process_id": "KERAS_DISTRIBUTION_PROCESS_ID",
}
ADDRESS = re.compile(r"^[^\s,:]+:\d{1,5}$")


def add_distribute_flags(group, input_shards=False):
    """--distribute, --model-shards and the multi-process flags (and
    --input-shards for the programs whose input is a sharded stream)."""
    from .flag_values import non_negative_int
    from .flag_values import positive_int

    group.add_argument(
        "--distribute",
        choices=DISTRIBUTE_CHOICES,
        default="none",
        help="'data' replicates the model on every device of every process "
        "(JAX keras.distribution.DataParallel; TensorFlow MirroredStrategy in "
        "one process); 'model' (JAX, one process) also shards the MLPs "
        "(keras_gmlp.distribution.ModelParallel)",
    )
    group.add_argument(
        "--model-shards",
        type=positive_int,
        default=None,
        help="devices each model is sharded over with --distribute model "
        "(default: all)",
    )
    group.add_argument(
        "--coordinator",
        help="a multi-process run's HOST:PORT of process 0, or every "
        "process's, comma-separated, process 0 first (JAX; default: "
        f"${ENVIRONMENT['coordinator']})",
    )
    group.add_argument(
        "--num-processes",
        type=positive_int,
        help=f"processes of a multi-process run (default: "
        f"${ENVIRONMENT['num_processes']}, else 1)",
    )
    group.add_argument(
        "--process-id",
        type=non_negative_int,
        help=f"this process's index, 0 to --num-processes - 1; process 0 "
        f"writes the outputs (default: ${ENVIRONMENT['process_id']})",
    )
    if input_shards:
        group.add_argument(
            "--input-shards",
            type=positive_int,
            help="shards of the train input, read by the processes in turn; "
            "a run with the same number trains on the same batches with any "
            "number of processes (default: one per process)",
        )


def _from_environment(args, name, kind):
    if getattr(args, name) is None and os.environ.get(ENVIRONMENT[name]):
        text = os.environ[ENVIRONMENT[name]]
        try:
            setattr(args, name, kind(text))
        except ValueError:
            return f"${ENVIRONMENT[name]} must be {kind.__name__}; received {text!r}"
    return None


def check_distribute_flags(parser, args):
    """Fills the multi-process flags in from Keras' environment variables
    and checks them together; a problem is a flag error."""
    for name, kind in (
        ("coordinator", str),
        ("num_processes", int),
        ("process_id", int),
    ):
        problem = _from_environment(args, name, kind)
        if problem:
            parser.error(problem)
    if args.model_shards is not None and args.distribute != "model":
        parser.error("--model-shards needs --distribute model")
    args.num_processes = args.num_processes or 1
    if args.num_processes > 1:
        _check_processes(parser, args)
    else:
        args.process_id = 0
    shards = getattr(args, "input_shards", None)
    if hasattr(args, "input_shards"):
        args.input_shards = shards = shards or args.num_processes
        if shards % args.num_processes:
            parser.error(
                f"--input-shards {shards} must be a multiple of --num-processes "
                f"{args.num_processes}: each process reads the same number"
            )
    divisor = shards or args.num_processes
    if args.batch_size is not None and args.batch_size % divisor:
        parser.error(
            f"--batch-size {args.batch_size} (the global batch) must be a "
            f"multiple of the {divisor} " + ("input shards" if shards else "processes")
        )


def _check_processes(parser, args):
    if args.distribute != "data":
        parser.error(
            f"--num-processes {args.num_processes} needs --distribute data "
            f"(received --distribute {args.distribute}): the processes train "
            "replicas of one model"
        )
    if args.process_id is None or args.coordinator is None:
        parser.error(
            "a multi-process run needs --coordinator HOST:PORT and --process-id "
            "(or their environment variables) in every process"
        )
    if not 0 <= args.process_id < args.num_processes:
        parser.error(
            f"--process-id {args.process_id} must be from 0 to below "
            f"--num-processes {args.num_processes}"
        )
    addresses = args.coordinator.split(",")
    if not all(ADDRESS.match(a) for a in addresses):
        parser.error(
            f"--coordinator takes HOST:PORT[,HOST:PORT...]; received {args.coordinator!r}"
        )
    if len(addresses) not in (1, args.num_processes):
        parser.error(
            f"--coordinator lists {len(addresses)} addresses: give process 0's, "
            f"or all {args.num_processes}"
        )


def _fail(parser, backend, args):
    parser.error(
        f"--distribute {args.distribute} runs on the JAX and TensorFlow "
        f"backends (several processes on JAX); this is {backend} (set "
        "KERAS_BACKEND)"
    )


class Placement:
    """Where a run trains: the `scope()` to build and compile the model in
    (a TensorFlow strategy's; JAX's distribution is global), and its
    `description`, None on one device."""

    def __init__(self, description, strategy=None):
        self.description = description
        self.strategy = strategy

    def scope(self):
        import contextlib

        return self.strategy.scope() if self.strategy else contextlib.nullcontext()


def start(parser, args, auto_shard=False):
    """Joins the other processes and sets the distribution up, before the
    first computation; returns the Placement. Refuses a backend that does
    not distribute, and a --distribute model the devices do not fit.

    With `auto_shard`, Keras gives each JAX process its part of a tf.data
    input's global batches; otherwise the program feeds each process's own
    batches."""
    import keras

    from .files import set_writer

    backend = keras.backend.backend()
    multi = args.num_processes > 1
    if args.distribute == "none":
        return Placement(None)
    if backend not in ("jax", "tensorflow"):
        _fail(parser, backend, args)
    if multi:
        set_writer(args.process_id == 0)
        from . import interrupt

        interrupt.PROCESSES = (args.process_id, args.num_processes)
    if backend == "jax":
        return _start_jax(parser, args, auto_shard)
    return _start_tensorflow(parser, args)


def _start_jax(parser, args, auto_shard):
    import keras

    if args.num_processes > 1:
        import jax

        # XLA's CPU client has no collectives across processes without it;
        # accelerators use their own (NCCL, ICI).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        keras.distribution.initialize(
            args.coordinator, args.num_processes, args.process_id
        )
    devices = keras.distribution.list_devices()
    if args.distribute == "data":
        replicas = len(devices)
        distribution = keras.distribution.DataParallel(
            devices=devices, auto_shard_dataset=auto_shard or args.num_processes == 1
        )
    else:
        replicas, distribution = _model_parallel(parser, args, devices)
    _check_replicas(parser, args, replicas)
    keras.distribution.set_distribution(distribution)
    return Placement(_describe(args, len(devices)))


def _model_parallel(parser, args, devices):
    import keras

    from keras_gmlp.distribution import ModelParallel
    from keras_gmlp.distribution import get_layout_map

    shards = args.model_shards or len(devices)
    if len(devices) % shards:
        parser.error(
            f"--model-shards {shards} does not divide the {len(devices)} devices"
        )
    replicas = len(devices) // shards
    mesh = keras.distribution.DeviceMesh(
        (replicas, shards), ("batch", "model"), devices
    )
    return replicas, ModelParallel(
        layout_map=get_layout_map(mesh), batch_dim_name="batch"
    )


def _check_replicas(parser, args, replicas):
    if args.batch_size % replicas:
        parser.error(
            f"--batch-size {args.batch_size} is not a multiple of the "
            f"{replicas} data-parallel replicas of --distribute {args.distribute}"
        )


def _start_tensorflow(parser, args):
    import tensorflow as tf

    if args.distribute == "model":
        parser.error(
            "--distribute model shards with JAX's keras.distribution "
            "(KERAS_BACKEND=jax); on TensorFlow use --distribute data"
        )
    if args.num_processes > 1:
        # Keras 3.15's TensorFlow trainer cannot fit under
        # MultiWorkerMirroredStrategy: before the first step it reduces the
        # first batch with strategy.reduce, which that strategy refuses for
        # (x, y) ("Attempt to convert a value (PerReplica...)"), even for a
        # Sequential model; keras-team/keras#20585, tensorflow#72388.
        # tests/distribution/test_multi_process.py names it.
        parser.error(
            f"--num-processes {args.num_processes} runs on JAX "
            "(KERAS_BACKEND=jax, keras.distribution.initialize); Keras 3's "
            "TensorFlow trainer cannot fit under MultiWorkerMirroredStrategy "
            "(keras-team/keras#20585)"
        )
    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices(
        "CPU"
    )
    strategy = tf.distribute.MirroredStrategy([d.name for d in devices])
    replicas = strategy.num_replicas_in_sync
    _check_replicas(parser, args, replicas)
    return Placement(_describe(args, replicas), strategy)


def _describe(args, devices):
    text = f"{args.distribute} over {devices} devices"
    if args.num_processes > 1:
        text += (
            f" in {args.num_processes} processes (this is process {args.process_id})"
        )
    return text


def local_copy(model):
    """`model` for predictions after a multi-process JAX run: a copy on
    this process's own devices. A prediction's batch spans every process,
    and no process can read the others' part of it; the weights, replicated
    in every process, can be read. Call it after the last distributed
    computation: the first call ends the distribution (and prints the
    weights' digest). Other runs get `model` itself."""
    import keras

    if keras.backend.backend() != "jax":
        return model
    import jax

    if jax.process_count() == 1:
        return model
    values = {v.path: keras.ops.convert_to_numpy(v) for v in model.variables}
    if keras.distribution.distribution() is not None:
        print_weights_digest(values.values())
        keras.distribution.set_distribution(None)
    copy = type(model).from_config(model.get_config())
    assign_by_path(copy, values)
    if getattr(model, "preprocessor", None) is not None:
        # Host-side, with assets (a vocabulary) that a config does not hold.
        copy.preprocessor = model.preprocessor
    return copy


def assign_by_path(copy, values):
    """Gives each of `copy`'s weights the value in `values` (path: array)
    of the same path, after checking that every weight has one: a model
    that names its weights differently when rebuilt (a Sequential one)
    would otherwise keep random weights. The seed generators' states are
    named by a process-wide count and are not compared: dropout is off in
    predictions. A tied weight rebuilt as two takes the one value twice."""

    def weights(paths):
        return {path for path in paths if not path.endswith("seed_generator_state")}

    unmatched = weights(v.path for v in copy.variables) ^ weights(values)
    if unmatched:
        raise ValueError(
            "local_copy: the rebuilt model's weights and the trained ones "
            f"differ in {sorted(unmatched)[:3]}; its weights are matched by "
            "path, so build the model as a Functional or keras-hub model"
        )
    for variable in copy.variables:
        if variable.path in values:
            variable.assign(values[variable.path])


def print_weights_digest(arrays):
    """Prints the SHA-256 of this process's copy of the weights: the
    replicas of a multi-process run must agree to the bit."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    import jax

    print(
        f"Process {jax.process_index()} of {jax.process_count()}: weights "
        f"SHA-256 {digest.hexdigest()[:16]}"
    )


def barrier(name):
    """Waits until every process of a multi-process run gets here: where
    the others read what process 0 has just written."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(name)


def _local_replicas():
    """The replicas this process feeds: 1 without a distribution."""
    import keras

    if keras.backend.backend() == "jax":
        if keras.distribution.distribution() is None:
            return 1
        import jax

        return jax.local_device_count()
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # Inside a Placement's scope: its strategy; else the default (1).
        return tf.distribute.get_strategy().num_replicas_in_sync
    return 1


def evaluation_data(x, y, ignored_label=None):
    """`(x, y, sample_weight)` of held-out arrays. With several local
    replicas (JAX devices, or a TensorFlow strategy's replicas) each takes
    an equal part of every batch, the last one included: the arrays are
    padded to a multiple of them with copies of the first example. Their
    labels are `ignored_label` (a language model's loss and metrics skip
    it) or, without one, they are weighted 0 (a loss averaged over the
    batch then counts them; accuracy does not). `sample_weight` is None
    unless needed."""
    import keras
    import numpy as np

    size = len(keras.tree.flatten(x)[0])
    extra = -size % _local_replicas()
    if not extra:
        return x, y, None

    def pad(array, value=None):
        array = np.asarray(array)
        rows = np.repeat(array[:1], extra, axis=0)
        if value is not None:
            rows[...] = value
        return np.concatenate([array, rows])

    x = keras.tree.map_structure(pad, x)
    if ignored_label is not None:
        return x, pad(y, ignored_label), None
    weights = (np.arange(size + extra) < size).astype("float32")
    return x, pad(y), weights
