"""applications/train_image_classifier.py, run as a user runs it.

Cost: about six program runs in subprocesses (a --fast run, an interrupted
run and its resumption, a --quantize int8 run, a tensorflow-datasets run on
mock data) plus a few runs that stop at a flag error before Keras is
imported, and in-process checks of the --weights path on tiny models, with
three --fast --lora-rank runs (uninterrupted, interrupted and resumed).
"""

import json
import os
import re
import signal
import time
import zipfile

import keras
import numpy as np
import pytest
import train_image_classifier as program
from _image_classifier import data as image_data
from _image_classifier import model as image_model
from _shared import interrupt
from _shared.callbacks import StopOnInterrupt
from _shared.callbacks import TrainingBackup

import keras_gmlp  # noqa: F401  (registers the layers for load_model)
from keras_gmlp.applications import timm_state_dict
from keras_gmlp.applications.gmlp import gMLP
from tests.applications.programs.helpers import describe
from tests.applications.programs.helpers import run_program
from tests.applications.programs.helpers import start_program

PROGRAM = "train_image_classifier"
OUTPUTS = (
    "best.keras",
    "final.keras",
    "history.csv",
    "training_curves.png",
    "confusion_matrix.png",
    "spatial_weights.png",
    "summary.json",
    "run_state.json",
)


def read_summary(directory):
    with open(directory / "summary.json", encoding="utf-8") as handle:
        return json.load(handle)


def read_history(directory):
    lines = (directory / "history.csv").read_text().strip().splitlines()
    header = lines[0].split(",")
    return [dict(zip(header, map(float, line.split(",")))) for line in lines[1:]]


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    """The default in --fast mode, 2 epochs: the uninterrupted reference of
    the resume test too."""
    output_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run_program(PROGRAM, "--fast", "--epochs", 2, "--output-dir", output_dir)
    assert result.returncode == 0, describe(result)
    return output_dir, result


def test_help_shows_every_default():
    result = run_program(PROGRAM, "--help", timeout=60)
    assert result.returncode == 0, describe(result)
    text = " ".join(result.stdout.split())  # undo argparse's line wrapping
    assert "(default: gmlp)" in text
    assert "(default: outputs/train_image_classifier)" in text
    assert "(default: digits)" in text
    assert "--weights" in text and "--recipe" in text


def test_fast_run_prints_no_tensorflow_log_line(fast_run):
    """On every backend: TensorFlow's start-up lines (oneDNN, CUDA, CPU
    features, absl's notice) are held back, and a healthy run logs no
    error (TensorFlow's "NodeDef mentions attribute" line, for one)."""
    _, result = fast_run
    logged = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if re.match(r"[IWEF]\d{4} ", line) or "absl::InitializeLog" in line
    ]
    assert logged == [], describe(result)


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--model", "resnet50"], "--model"),
        (["--image-size", "18"], "--image-size"),
        (["--model", "gmlp_s16", "--image-size", "200"], "--image-size"),
        (["--epochs", "0"], "--epochs"),
        (["--weights", "no/such/file.safetensors"], "--weights"),
        (["--weights", "imagenet"], "--weights"),
        (["--model", "gmlp_s16", "--depth", "3"], "--depth"),
        (["--dataset", "no_such_dataset_name"], "--dataset"),
    ],
)
def test_flag_errors_before_any_work(tmp_path, args, flag):
    output_dir = tmp_path / "never_created"
    result = run_program(PROGRAM, *args, "--output-dir", output_dir, timeout=120)
    assert result.returncode == 2, describe(result)
    message = result.stderr.strip().splitlines()[-1]
    assert flag in message, describe(result)
    assert "Traceback" not in result.stderr
    # Refused before the output directory is made, or it is removed.
    assert not output_dir.exists()


def test_unusable_output_dir(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for output_dir in (blocker, blocker / "below"):
        result = run_program(PROGRAM, "--output-dir", output_dir, timeout=60)
        assert result.returncode == 2, describe(result)
        assert "--output-dir" in result.stderr.strip().splitlines()[-1]


def test_fast_default_writes_every_output(fast_run):
    import matplotlib.pyplot as plt

    output_dir, result = fast_run
    names = sorted(os.listdir(output_dir))
    # No temporary files and no backup are left behind.
    assert names == sorted(OUTPUTS), names
    summary = read_summary(output_dir)
    assert summary["backend"] == keras.backend.backend()
    assert summary["model"] == "gmlp"
    assert summary["dataset"] == "digits"
    # Three disjoint parts of the 200 --fast digits: the validation split
    # chooses the epoch, the test split scores the chosen model.
    assert summary["splits"] == {
        "train": {"split": "digits[:70%]", "images": 140},
        "validation": {"split": "digits[70%:80%]", "images": 20},
        "test": {"split": "digits[80%:]", "images": 40},
    }
    assert summary["epochs_completed"] == 2
    assert summary["flags"]["fast"] is True
    assert summary["seconds"] > 0
    history = read_history(output_dir)
    # Counted from 1, as the console, the plots and summary.json count.
    assert [row["epoch"] for row in history] == [1.0, 2.0]
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(history[0])
    best = max(range(2), key=lambda e: (history[e]["val_accuracy"], -e))
    assert summary["best_epoch"] == best + 1
    assert summary["best_val_accuracy"] == pytest.approx(history[best]["val_accuracy"])
    for name in ("training_curves.png", "confusion_matrix.png", "spatial_weights.png"):
        pixels = plt.imread(output_dir / name)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, name
        assert pixels.std() > 0.01, f"{name} is blank"

    # The saved best model reproduces the reported test accuracy on the
    # test split, rebuilt here from scikit-learn's data.
    model = keras.saving.load_model(output_dir / "best.keras")
    data = image_data.load_digits(16, fast=True)
    images, labels = data["test"]
    predictions = np.argmax(model.predict(images, verbose=0), axis=-1)
    assert np.mean(predictions == labels) == pytest.approx(summary["test_accuracy"])
    assert model.count_params() == summary["parameters"]
    assert zipfile.is_zipfile(output_dir / "best.keras")


def _int8_kernels(model):
    return sorted(v.path for v in model.weights if v.dtype == "int8")


def test_quantize_int8_scores_and_saves_a_quantized_copy(tmp_path):
    """On the MLP-Mixer (one run for both: each program run costs about a
    minute of CI per backend), which also draws its token-mixing units."""
    import warnings

    import matplotlib.pyplot as plt

    result = run_program(
        PROGRAM,
        "--fast",
        "--model",
        "mixer",
        "--epochs",
        1,
        "--quantize",
        "int8",
        "--output-dir",
        tmp_path,
    )
    assert result.returncode == 0, describe(result)
    pixels = plt.imread(tmp_path / "token_mixing_units.png")
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100
    assert pixels.std() > 0.01, "token_mixing_units.png is blank"
    summary = read_summary(tmp_path)
    assert summary["flags"]["quantize"] == "int8"
    line = re.search(
        r"^Test accuracy (\S+) with int8 weights \(float32 (\S+)\)\.$",
        result.stdout,
        re.MULTILINE,
    )
    assert line, describe(result)
    assert float(line[1]) == pytest.approx(summary["test_accuracy_int8"], abs=1e-4)
    assert float(line[2]) == pytest.approx(summary["test_accuracy"], abs=1e-4)
    assert 0 < summary["test_loss_int8"] < 10

    # The trained model stays float: quantized here by hand, it scores on
    # the test split (rebuilt from scikit-learn's data) what summary.json
    # says, close to float32's.
    best = keras.saving.load_model(tmp_path / "best.keras")
    assert _int8_kernels(best) == []
    images, labels = image_data.load_digits(16, fast=True)["test"]
    float_logits = best.predict(images, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        best.quantize("int8")
    logits = best.predict(images, verbose=0)
    accuracy = np.mean(np.argmax(logits, axis=-1) == labels)
    assert accuracy == pytest.approx(summary["test_accuracy_int8"], abs=1e-6)
    # Near chance after one epoch, a flipped image moves the accuracy by
    # 2.5%; the loss is what int8 must keep close.
    assert summary["test_loss_int8"] == pytest.approx(summary["test_loss"], rel=0.02)
    loss = keras.losses.CategoricalCrossentropy(from_logits=True)(
        keras.utils.to_categorical(labels, 10), logits
    )
    # Equal to float32 round-off (the float model's loss is further off).
    assert float(loss) == pytest.approx(summary["test_loss_int8"], rel=1e-6)
    assert not np.allclose(logits, float_logits, atol=1e-6)

    # best_int8.keras is that model: int8 kernels, the same predictions.
    saved = keras.saving.load_model(tmp_path / "best_int8.keras")
    assert _int8_kernels(saved) == _int8_kernels(best) != []
    np.testing.assert_allclose(saved.predict(images, verbose=0), logits, atol=1e-5)
    outputs = set(OUTPUTS) - {"spatial_weights.png"}
    outputs |= {"token_mixing_units.png", "best_int8.keras"}
    assert sorted(os.listdir(tmp_path)) == sorted(outputs)


def test_tfds_dataset_on_mock_data(tmp_path):
    result = run_program(
        PROGRAM,
        "--fast",
        "--dataset",
        "mnist",
        "--data-dir",
        tmp_path / "tfds",
        "--batch-size",
        32,
        "--output-dir",
        tmp_path / "out",
        mock_tfds_examples=96,
    )
    assert result.returncode == 0, describe(result)
    summary = read_summary(tmp_path / "out")
    assert summary["dataset"] == "mnist"
    assert summary["splits"] == {
        "train": {"split": "train[:90%]", "images": 64},
        "validation": {"split": "train[90%:]", "images": 32},
        "test": {"split": "test", "images": 32},
    }
    assert summary["classes"] == 10
    assert (tmp_path / "out" / "confusion_matrix.png").stat().st_size > 0


@pytest.mark.parametrize(
    "name, splits, expected",
    [
        (
            "imagenet2012",
            {"train": 1, "validation": 1, "test": 1},
            ("train[:99%]", "train[99%:]", "validation"),
        ),
        ("imagenet2012", {}, ("train[:99%]", "train[99%:]", "validation")),
        ("cifar10", {"train": 1, "test": 1}, ("train[:90%]", "train[90%:]", "test")),
        ("mnist", {}, ("train[:90%]", "train[90%:]", "test")),
        (
            "oxford_flowers102",
            {"train": 1, "validation": 1, "test": 1},
            ("train", "validation", "test"),
        ),
        (
            "some_images",
            {"train": 1, "validation": 1},
            ("train[:90%]", "train[90%:]", "validation"),
        ),
        ("some_images", {"train": 1}, ("train[:80%]", "train[80%:90%]", "train[90%:]")),
    ],
)
def test_split_rule(name, splits, expected):
    assert image_data.choose_splits(name, splits) == expected


def test_digits_splits_are_disjoint_and_cover_the_data():
    from sklearn.datasets import load_digits

    data = image_data.load_digits(8, fast=False)
    sizes = [len(data[part][1]) for part in ("train", "validation", "test")]
    assert sizes == [1257, 180, 360]
    # At 8x8 the images are the originals: each one is in exactly one part.
    rows = np.concatenate([data[p][0] for p in ("train", "validation", "test")])
    original = (load_digits().images * (255.0 / 16.0)).astype("float32")
    flat = {tuple(image.ravel()) for image in rows}
    assert len(rows) == len(original)
    assert flat == {tuple(image.ravel()) for image in original}


def test_ctrl_c_prints_one_line_and_stops(tmp_path):
    # Many short epochs, so that the signal, sent once the first epoch's
    # history row is on disk, arrives while training still runs.
    output_dir = tmp_path / "interrupted"
    process = start_program(
        PROGRAM, "--fast", "--epochs", 200, "--output-dir", output_dir
    )
    history = output_dir / "history.csv"
    deadline = time.time() + 600
    try:
        while time.time() < deadline and process.poll() is None:
            if history.exists() and len(history.read_text().splitlines()) >= 2:
                process.send_signal(signal.SIGINT)
                break
            time.sleep(0.02)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 130, f"{process.returncode}\n{stdout}\n{stderr}"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    interrupted = [line for line in stderr.splitlines() if "Interrupted" in line]
    assert len(interrupted) == 1 and "--output-dir" in interrupted[0], stderr
    assert 1 <= len(read_history(output_dir)) < 200
    assert not (output_dir / "final.keras").exists()


def test_a_swallowed_ctrl_c_stops_training_at_the_next_batch():
    # A KeyboardInterrupt raised inside a `__del__` or a library's catch-all
    # is lost; the flag the SIGINT handler sets stops training anyway.
    inputs = keras.Input((2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse")
    seen = []

    class Count(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)
            if batch == 1:
                interrupt.INTERRUPTED.set()  # as the handler does; no raise

    try:
        with pytest.raises(KeyboardInterrupt):
            model.fit(
                np.zeros((16, 2)),
                np.zeros((16, 1)),
                batch_size=2,
                epochs=3,
                callbacks=[Count(), StopOnInterrupt()],
                verbose=0,
            )
    finally:
        interrupt.INTERRUPTED.clear()
    assert seen == [0, 1]


def test_ctrl_c_during_fit_waits_for_the_batch_end_and_a_second_one_does_not():
    # Raised from the handler, the interrupt could land in a garbage
    # collector callback and be printed as "Exception ignored"; while fit
    # runs, the handler only sets the flag.
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupt._on_interrupt(signal.SIGINT, None)  # not training
        interrupt.INTERRUPTED.clear()
        interrupt.TRAINING.set()
        interrupt._on_interrupt(signal.SIGINT, None)  # deferred
        assert interrupt.INTERRUPTED.is_set()
        with pytest.raises(KeyboardInterrupt):
            interrupt._on_interrupt(signal.SIGINT, None)  # the second one
    finally:
        interrupt.INTERRUPTED.clear()
        interrupt.TRAINING.clear()


def test_interrupt_then_resume_matches_uninterrupted(tmp_path, monkeypatch):
    # In-process, so that the interruption comes at a chosen point: right
    # after the first epoch's backup is written, as a Ctrl-C there would.
    args = ["--fast", "--epochs", "2"]
    reference_dir, output_dir = tmp_path / "uninterrupted", tmp_path / "resumed"
    program.main(args + ["--output-dir", str(reference_dir)])
    _interrupt_after_first_epoch(args + ["--output-dir", str(output_dir)], monkeypatch)
    assert len(read_history(output_dir)) == 1
    assert (output_dir / "backup").is_dir()
    assert not (output_dir / "final.keras").exists()

    program.main(args + ["--output-dir", str(output_dir)])
    assert not (output_dir / "backup").exists()
    resumed, reference = read_summary(output_dir), read_summary(reference_dir)
    # Same data order (seeded by epoch), same restored weights, optimizer
    # and random state: the runs do the same float32 arithmetic, so they
    # agree to round-off (1e-6 allows for a reordered reduction).
    for key in ("test_loss", "test_accuracy", "best_val_accuracy"):
        assert resumed[key] == pytest.approx(reference[key], abs=1e-6), key
    assert len(read_history(output_dir)) == 2
    for row, reference_row in zip(
        read_history(output_dir), read_history(reference_dir)
    ):
        assert row == pytest.approx(reference_row, abs=1e-6)
    final = keras.saving.load_model(output_dir / "final.keras")
    expected = keras.saving.load_model(reference_dir / "final.keras")
    for mine, theirs in zip(final.weights, expected.weights):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(mine),
            keras.ops.convert_to_numpy(theirs),
            atol=1e-6,
            err_msg=mine.path,
        )


def _source_model(classes):
    """A 3-channel gMLP at 16x16 (16 tokens) with perturbed weights."""
    model = gMLP(
        num_blocks=1,
        hidden_dim=16,
        intermediate_dim=96,
        patch_size=4,
        input_shape=(16, 16, 3),
        classes=classes,
        classifier_activation=None,
    )
    rng = np.random.default_rng(0)
    for variable in model.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def _build(tmp_path, weights, classes=10):
    args = [
        "--model",
        "gmlp",
        "--depth",
        "1",
        "--width",
        "16",
        "--ffn-ratio",
        "6",
        "--patch-size",
        "4",
        "--image-size",
        "32",
        "--weights",
        weights,
        "--output-dir",
        tmp_path / "out",
    ]
    parser, parsed = program.parse_args([str(arg) for arg in args])
    state = image_model.read_start_weights(parser, parsed)
    channels = int(state["stem.proj.weight"].shape[1])
    return image_model.build_model(parser, parsed, channels, classes, state)


def _timm_checkpoint(tmp_path, classes=5):
    """(path, state) of `_source_model` saved in timm's layout."""
    from safetensors.numpy import save_file

    source = _source_model(classes)
    # safetensors writes the raw buffer of a transposed view: contiguous
    # copies (timm_state_dict returns views).
    state = {k: np.ascontiguousarray(v) for k, v in timm_state_dict(source).items()}
    path = tmp_path / "source.safetensors"
    save_file(state, str(path))
    return path, state


def test_timm_checkpoint_fine_tuning_replaces_head_and_resamples(tmp_path):
    path, state = _timm_checkpoint(tmp_path)
    model, start = _build(tmp_path, path, classes=10)
    assert start == "body loaded, new head"
    assert model.input_shape == (None, 32, 32, 3)
    assert model.output_shape == (None, 10)
    loaded = timm_state_dict(model)
    np.testing.assert_array_equal(loaded["stem.proj.weight"], state["stem.proj.weight"])
    np.testing.assert_allclose(
        loaded["blocks.0.mlp_channels.fc1.weight"],
        state["blocks.0.mlp_channels.fc1.weight"],
        rtol=1e-6,
    )
    # 4x4 -> 8x8 tokens: the library's resampling, as a builder given the
    # same checkpoint does it.
    reference = gMLP(
        num_blocks=1,
        hidden_dim=16,
        intermediate_dim=96,
        patch_size=4,
        input_shape=(32, 32, 3),
        include_top=False,
        weights=str(path),
    )
    np.testing.assert_allclose(
        loaded["blocks.0.mlp_channels.gate.proj.weight"],
        timm_state_dict(reference)["blocks.0.mlp_channels.gate.proj.weight"],
        rtol=1e-6,
    )
    assert loaded["head.weight"].shape == (10, 16)


def _interrupt_after_first_epoch(program_args, monkeypatch):
    """Runs the program in-process until the first epoch's backup is
    written, then raises KeyboardInterrupt, as a Ctrl-C there would."""
    backup_on_epoch_end = TrainingBackup.on_epoch_end

    def interrupt_after_first_epoch(self, epoch, logs=None):
        backup_on_epoch_end(self, epoch, logs)
        if epoch == 0:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(TrainingBackup, "on_epoch_end", interrupt_after_first_epoch)
        with pytest.raises(KeyboardInterrupt):
            program.main(program_args)


def test_lora_trains_factors_biases_and_head_and_resumes_as_uninterrupted(
    tmp_path, monkeypatch
):
    path, state = _timm_checkpoint(tmp_path)
    args = ["--fast", "--epochs", "2", "--weights", str(path), "--lora-rank", "2"]
    reference_dir, output_dir = tmp_path / "uninterrupted", tmp_path / "resumed"
    program.main(args + ["--output-dir", str(reference_dir)])
    summary = read_summary(reference_dir)
    # --fast's gMLP: one block of width 16 and d_ffn 96 (its output
    # projection sees half), 10 digit classes. LoRA's factors are
    # (inputs, rank) and (rank, outputs); the biases and the head train.
    width, ffn, rank, classes = 16, 96, 2, 10
    adapted = [(width, ffn), (ffn // 2, width)]
    expected = sum(rank * (n + m) + m for n, m in adapted) + (width + 1) * classes
    assert summary["trainable_parameters"] == expected == 634
    final = keras.saving.load_model(reference_dir / "final.keras", compile=False)
    trained = timm_state_dict(final)
    for name in ("stem.proj.weight", "blocks.0.mlp_channels.gate.proj.weight"):
        np.testing.assert_array_equal(trained[name], state[name], err_msg=name)
    # The saved kernel is merged: it moved by a product of rank 2.
    for name in ("fc1", "fc2"):
        key = f"blocks.0.mlp_channels.{name}.weight"
        singular = np.linalg.svd(trained[key] - state[key], compute_uv=False)
        assert singular[2] < 1e-3 * singular[0] and singular[1] > 0, name

    _interrupt_after_first_epoch(args + ["--output-dir", str(output_dir)], monkeypatch)
    assert len(read_history(output_dir)) == 1
    program.main(args + ["--output-dir", str(output_dir)])
    # The factors were restored too (Keras saves them merged into the
    # kernels, and loads them as zeros): the runs agree to round-off.
    resumed = read_summary(output_dir)
    for key in ("test_loss", "test_accuracy", "best_val_accuracy"):
        assert resumed[key] == pytest.approx(summary[key], abs=1e-6), key
    for row, reference_row in zip(
        read_history(output_dir), read_history(reference_dir)
    ):
        assert row == pytest.approx(reference_row, abs=1e-6)


def test_lora_on_an_int8_body_trains_what_float_lora_trains(tmp_path):
    """--quantize-base int8: the body's Dense kernels int8, LoRA's factors,
    the adapted layers' biases and the float head train (the 634 weights
    of LoRA on the float model, above), and the saved model is int8."""
    path, _ = _timm_checkpoint(tmp_path)
    args = ["--fast", "--weights", str(path), "--lora-rank", "2"]
    args += ["--quantize-base", "int8", "--output-dir", str(tmp_path / "out")]
    program.main(args)
    assert read_summary(tmp_path / "out")["trainable_parameters"] == 634
    final = keras.saving.load_model(tmp_path / "out" / "final.keras", compile=False)
    modes = {
        layer.name: layer.quantization_mode
        for layer in final._flatten_layers()
        if isinstance(layer, keras.layers.Dense)
    }
    assert modes.pop("predictions") is None
    assert set(modes.values()) == {"int8"}, modes


def test_keras_weights_of_same_classes_keep_the_head(tmp_path):
    source = _source_model(classes=10)
    path = tmp_path / "source.weights.h5"
    source.save_weights(str(path))
    model, start = _build(tmp_path, path, classes=10)
    assert start == "all weights loaded, head kept"
    loaded, state = timm_state_dict(model), timm_state_dict(source)
    np.testing.assert_allclose(loaded["head.weight"], state["head.weight"], rtol=1e-6)
    np.testing.assert_allclose(
        loaded["stem.proj.weight"], state["stem.proj.weight"], rtol=1e-6
    )
    assert loaded["blocks.0.mlp_channels.gate.proj.weight"].shape == (64, 64)


def test_paper_recipe_sets_the_paper_values_and_flags_win(tmp_path):
    _, args = program.parse_args(
        [
            "--recipe",
            "paper",
            "--model",
            "gmlp_s16",
            "--epochs",
            "3",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert args.epochs == 3  # given on the command line
    assert (args.dataset, args.image_size, args.batch_size) == (
        "imagenet2012",
        224,
        4096,
    )
    assert (args.learning_rate, args.warmup_steps, args.weight_decay) == (
        1e-3,
        10_000,
        0.05,
    )
    assert (args.label_smoothing, args.mixup, args.cutmix) == (0.1, 0.8, 1.0)
    assert args.randaugment == 2 and args.flip and args.clip_norm == 1.0
    assert args.drop_path_rate == 0.05  # survival probability 0.95 for gMLP-S
    _, args = program.parse_args(
        [
            "--recipe",
            "paper",
            "--model",
            "gmlp_b16",
            "--drop-path-rate",
            "0.1",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert args.drop_path_rate == 0.1


def test_distribute_is_checked_before_training(tmp_path):
    backend = keras.backend.backend()
    if backend == "jax":
        # One CPU device: a mesh of 3 model shards cannot be made.
        args, flag = ["--distribute", "model", "--model-shards", "3"], "--model-shards"
    elif backend == "tensorflow":
        # The layout map shards with keras.distribution (JAX).
        args, flag = ["--distribute", "model"], "--distribute model"
    else:
        args, flag = ["--distribute", "data"], "JAX and TensorFlow"
    result = run_program(
        PROGRAM, "--fast", *args, "--output-dir", tmp_path, timeout=300
    )
    assert result.returncode == 2, describe(result)
    assert flag in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "history.csv").exists()


def test_an_interrupt_after_training_resumes_from_the_trained_weights(
    fast_run, tmp_path, monkeypatch
):
    from _image_classifier import reporting

    reference_dir, _ = fast_run
    output_dir = tmp_path / "out"
    args = ["--fast", "--epochs", "2", "--output-dir", str(output_dir)]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        # Ctrl-C while the report draws its pictures.
        patch.setattr(reporting, "plot_model_weights", interrupted)
        with pytest.raises(KeyboardInterrupt):
            program.main(args)
    state = json.loads((output_dir / "run_state.json").read_text())
    assert state["stage"] == "trained"
    assert (output_dir / "trained.weights.h5").is_file()
    assert not (output_dir / "backup").exists()
    with monkeypatch.context() as patch:
        # Only the report runs again.
        patch.setattr(keras.Model, "fit", interrupted)
        program.main(args)
    assert sorted(os.listdir(output_dir)) == sorted(OUTPUTS)
    summary, reference = read_summary(output_dir), read_summary(reference_dir)
    for key in ("test_loss", "test_accuracy", "best_epoch", "epochs_completed"):
        assert summary[key] == pytest.approx(reference[key], abs=1e-6), key


def test_patience_stops_where_validation_stopped_improving(tmp_path):
    from _shared.callbacks import patience_ran_out

    epochs = 6
    program.main(
        ["--fast", "--epochs", str(epochs), "--patience", "1"]
        + ["--output-dir", str(tmp_path)]
    )
    history = dict(enumerate(read_history(tmp_path)))
    # It trained on while validation accuracy improved, and stopped at the
    # first epoch that did not improve it (or at the last epoch).
    for end in range(1, len(history)):
        prefix = {e: history[e] for e in range(end)}
        assert not patience_ran_out(prefix, "val_accuracy", "max", 1), end
    assert len(history) == epochs or patience_ran_out(history, "val_accuracy", "max", 1)
    assert read_summary(tmp_path)["epochs_completed"] == len(history)
    assert read_summary(tmp_path)["flags"]["patience"] == 1
