"""The resumable fit's callbacks (`_shared/callbacks.py`) on a tiny model:
the epoch history's file, the best model by `monitor` in either mode, the
backup's files and a resume that continues where an uninterrupted run would
be, early stopping counted from the history by hand, the stream's states,
and the one-line refusals of damaged backups, asserted whole."""

import json
import pathlib
import threading
import types

import keras
import numpy as np
import pytest
from _shared import callbacks
from _shared.interrupt import INTERRUPTED
from _shared.interrupt import TRAINING
from _shared.run_state import RunState

RESTART = "rerun with --restart to start over"
X = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(8, 3)
Y = X @ np.array([[0.5], [-1.0], [2.0]], "float32")


@pytest.fixture(autouse=True)
def no_interrupt():
    yield
    INTERRUPTED.clear()
    TRAINING.clear()


def tiny_model(dropout="both"):
    """Dense(1) over 3 inputs behind a seeded dropout, and with "both" an
    unseeded one (on PyTorch it draws from the global generator): the
    backup keeps the seed generators' states and PyTorch's global one; SGD
    with momentum, whose state the backup keeps too."""
    layers = [keras.Input((3,))]
    if dropout:
        layers.append(keras.layers.Dropout(0.25, seed=7))
    if dropout == "both":
        layers.append(keras.layers.Dropout(0.25))
    layers.append(keras.layers.Dense(1, kernel_initializer="ones"))
    model = keras.Sequential(layers)
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse")
    return model


def weights(model):
    return [keras.ops.convert_to_numpy(w) for w in model.weights]


class Recorder(keras.callbacks.Callback):
    """The epochs a fit began, and whether it began at all."""

    def __init__(self, interrupt_after=None):
        super().__init__()
        self.began, self.epochs, self.interrupt_after = 0, [], interrupt_after

    def on_train_begin(self, logs=None):
        self.began += 1

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.interrupt_after:
            INTERRUPTED.set()  # Ctrl-C: StopOnInterrupt raises at the next batch


def fit(model, folder, recorder=None, **overrides):
    args = dict(
        monitor="val_loss",
        mode="min",
        x=X,
        y=Y,
        validation_data=(X, Y),
        epochs=4,
        batch_size=4,
        shuffle=False,
        verbose=0,
        callbacks=[recorder or Recorder()],
    )
    args.update(overrides)
    pathlib.Path(folder).mkdir(parents=True, exist_ok=True)
    return callbacks.fit_resumably(model, RunState(folder, {}), **args)


def test_an_interrupted_fit_resumes_where_an_uninterrupted_one_would_be(
    tmp_path, capsys
):
    """Ctrl-C in epoch 3 leaves the backup of epoch 2 (its files only, and
    latest.json naming it); the rerun trains epochs 3 and 4 only, and ends
    with the history, best and final models of an uninterrupted run, its
    unseeded dropout included (on PyTorch: the global generator, which
    Keras' DataLoader of the arrays draws from at each epoch's start)."""
    keras.utils.set_random_seed(5)
    whole = tiny_model()
    fit(whole, tmp_path / "whole")
    expected_rows = (tmp_path / "whole" / "history.csv").read_text()

    keras.utils.set_random_seed(5)
    model = tiny_model()
    with pytest.raises(KeyboardInterrupt):
        fit(model, tmp_path / "run", Recorder(interrupt_after=1))
    INTERRUPTED.clear()
    backup = tmp_path / "run" / "backup"
    assert sorted(p.name for p in backup.iterdir()) == [
        "best.weights.h5",
        "epoch-2.seeds.npz",
        "epoch-2.weights.h5",
        "latest.json",
    ]
    assert (backup / "latest.json").read_text() == '{"epoch": 2}\n'
    with np.load(backup / "epoch-2.seeds.npz") as seeds:
        names = {"state_0", "state_1"}
        if keras.backend.backend() == "torch":
            names.add("torch_rng_state")
        assert set(seeds.files) == names
    assert len((tmp_path / "run" / "history.csv").read_text().splitlines()) == 3

    # Another process: other random states, a fresh model and optimizer.
    keras.utils.set_random_seed(99)
    resumed = tiny_model()
    recorder = Recorder()
    capsys.readouterr()
    history = fit(resumed, tmp_path / "run", recorder)
    assert recorder.epochs == [2, 3]
    assert sorted(history.rows) == [0, 1, 2, 3]
    assert (tmp_path / "run" / "history.csv").read_text() == expected_rows
    for name in ("best.keras", "final.keras"):
        got = keras.saving.load_model(tmp_path / "run" / name)
        want = keras.saving.load_model(tmp_path / "whole" / name)
        for got_weights, want_weights in zip(weights(got), weights(want)):
            np.testing.assert_array_equal(got_weights, want_weights)
    for got, want in zip(weights(resumed), weights(whole)):
        np.testing.assert_array_equal(got, want)
    assert not backup.exists()
    out = capsys.readouterr().out
    assert f"Training steps: {callbacks.step_path(resumed)}.\n" in out
    assert out.count("Checkpoint saved in ") == 2
    state = json.loads((tmp_path / "run" / "run_state.json").read_text())
    assert state["stage"] == "trained"


def test_a_trained_run_loads_its_weights_without_training(tmp_path, monkeypatch):
    """Stage "trained": the kept weights are loaded, nothing is trained or
    written; the multi-process barriers are passed in order."""
    passed = []
    monkeypatch.setattr(callbacks, "barrier", passed.append)
    keras.utils.set_random_seed(5)
    trained = tiny_model(dropout=None)
    fit(trained, tmp_path, epochs=2)
    assert passed == ["begin", "trained"]
    kept = (tmp_path / "trained.weights.h5").read_bytes()
    final = (tmp_path / "final.keras").stat().st_mtime_ns

    fresh = tiny_model(dropout=None)
    recorder = Recorder()
    run = RunState(tmp_path, {}, stage="trained")
    history = callbacks.fit_resumably(
        fresh, run, "val_loss", "min", x=X, y=Y, epochs=2, callbacks=[recorder]
    )
    assert recorder.began == 0
    assert sorted(history.rows) == [0, 1]
    assert (tmp_path / "trained.weights.h5").read_bytes() == kept
    assert (tmp_path / "final.keras").stat().st_mtime_ns == final
    for got, want in zip(weights(fresh), weights(trained)):
        np.testing.assert_array_equal(got, want)


class StopAtTheEnd(Recorder):
    """Ctrl-C once the last epoch's backup is written, before the weights
    are kept."""

    def on_train_end(self, logs=None):
        raise KeyboardInterrupt


def test_a_run_interrupted_after_its_last_epoch_trains_no_more(tmp_path):
    """Every epoch backed up: the rerun restores the last one, trains
    nothing, keeps the best and writes the final model of its weights."""
    model = tiny_model(None)
    with pytest.raises(KeyboardInterrupt):
        fit(model, tmp_path, StopAtTheEnd(), epochs=2)
    last = weights(model)
    recorder = Recorder()
    fresh = tiny_model(None)
    history = fit(fresh, tmp_path, recorder, epochs=2)
    assert recorder.began == 0
    assert sorted(history.rows) == [0, 1]
    final = keras.saving.load_model(tmp_path / "final.keras")
    for got, want in zip(weights(final), last):
        np.testing.assert_array_equal(got, want)
    assert not (tmp_path / "backup").exists()


def linear_model():
    """y = w * x, w = 0: SGD(0.1) towards y = x gives w = 1 - 0.8 ** (k + 1)
    after epoch k (as test_checkpoint_split's)."""
    model = keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros"),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def linear_fit(model, folder, recorder, **overrides):
    ones = np.ones((1, 1), "float32")
    return fit(
        model,
        folder,
        recorder,
        x=ones,
        y=ones,
        validation_data=(ones, 0.5 * ones),
        epochs=10,
        batch_size=1,
        patience=2,
        **overrides,
    )


def test_a_run_whose_patience_ran_out_before_its_weights_were_kept(tmp_path, capsys):
    """The validation loss (w - 0.5)^2 falls to epoch 3 (w = 0.488) and
    rises after it: patience 2 stops after epoch 5. Interrupted after epoch
    3 (the highest loss is epoch 1's: in mode "max" patience would have run
    out), the rerun trains epochs 4 and 5; interrupted then, before the
    weights were kept, the next trains nothing: it keeps epoch 3's weights
    and epoch 5's as the final ones."""
    with pytest.raises(KeyboardInterrupt):
        linear_fit(linear_model(), tmp_path, Recorder(interrupt_after=2))
    INTERRUPTED.clear()
    stopped = StopAtTheEnd()
    with pytest.raises(KeyboardInterrupt):
        linear_fit(linear_model(), tmp_path, stopped)
    assert stopped.epochs == [3, 4]
    assert "Early stop: val_loss has not improved for 2 epochs.\n" in (
        capsys.readouterr().out
    )
    model = linear_model()
    recorder = Recorder()
    history = linear_fit(model, tmp_path, recorder)
    assert recorder.began == 0
    assert sorted(history.rows) == [0, 1, 2, 3, 4]
    w = [1 - 0.8 ** (k + 1) for k in range(5)]
    assert keras.ops.convert_to_numpy(model.weights[0])[0, 0] == pytest.approx(w[2])
    final = keras.saving.load_model(tmp_path / "final.keras")
    assert keras.ops.convert_to_numpy(final.weights[0])[0, 0] == pytest.approx(w[4])


def test_max_mode_and_a_save_function_keep_the_best_preset(tmp_path):
    """mode="max" of -val_loss chooses what min of val_loss does; `save`
    writes the best and final presets (folders), through a temporary name."""
    saved = []

    def save_to_preset(model):
        def save(folder):
            saved.append(pathlib.Path(folder).name)
            model.save_weights(pathlib.Path(folder, "model.weights.h5"))

        return save

    class Negated(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if "val_loss" in logs:
                logs["score"] = -logs["val_loss"]

    model = linear_model()
    linear_fit(
        model,
        tmp_path,
        Recorder(),
        monitor="score",
        mode="max",
        save=save_to_preset(model),
        names=("best_preset", "final_preset"),
        callbacks=[Negated()],
    )
    assert all(name.startswith((".best_preset-", ".final_preset-")) for name in saved)
    assert sum(name.startswith(".final_preset-") for name in saved) == 1
    w = [1 - 0.8 ** (k + 1) for k in range(5)]
    for name, want in (("best_preset", w[2]), ("final_preset", w[4])):
        kept = linear_model()
        kept.load_weights(tmp_path / name / "model.weights.h5")
        assert keras.ops.convert_to_numpy(kept.weights[0])[0, 0] == pytest.approx(want)
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_without_a_score_the_last_weights_are_kept(tmp_path):
    """No epoch has `monitor` (no validation data): no best model, and the
    trained weights are the last epoch's."""
    model = tiny_model(dropout=None)
    fit(model, tmp_path, validation_data=None, epochs=2)
    assert not (tmp_path / "best.keras").exists()
    last = keras.saving.load_model(tmp_path / "final.keras")
    for got, want in zip(weights(model), weights(last)):
        np.testing.assert_array_equal(got, want)


def test_a_fit_of_no_epochs_keeps_the_untrained_weights(tmp_path):
    model = tiny_model(dropout=None)
    before = weights(model)
    recorder = Recorder()
    fit(model, tmp_path, recorder, epochs=0)
    assert recorder.began == 0
    for got, want in zip(weights(model), before):
        np.testing.assert_array_equal(got, want)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "final.keras",
        "run_state.json",
        "trained.weights.h5",
    ]


def test_a_lora_model_fits_resumably_with_its_factors_kept(tmp_path):
    model = tiny_model(dropout=None)
    model.layers[-1].enable_lora(1)
    model.compile(keras.optimizers.SGD(0.05), "mse")
    with pytest.raises(KeyboardInterrupt):
        fit(model, tmp_path, Recorder(interrupt_after=0))
    assert (tmp_path / "backup" / "lora-epoch-1.npz").exists()


def test_epoch_history_file_and_rows(tmp_path):
    """history.csv counts epochs from 1, writes each value's repr, leaves a
    metric an epoch lacks empty, and drops the rows of a longer earlier run."""
    path = tmp_path / "history.csv"
    history = callbacks.EpochHistory(path)
    history.on_epoch_end(0, {"loss": 0.5, "val_loss": 0.25})
    history.on_epoch_end(1, {"loss": np.float32(0.125)})
    history.on_epoch_end(2, {"loss": 0.1, "val_loss": 1 / 3})
    # Bytes: Unix line ends, not the csv module's default "\r\n".
    assert path.read_bytes() == (
        f"epoch,loss,val_loss\n1,0.5,0.25\n2,0.125,\n3,0.1,{1 / 3!r}\n".encode()
    )
    again = callbacks.EpochHistory(path)
    again.read()
    assert again.rows == {
        0: {"loss": 0.5, "val_loss": 0.25},
        1: {"loss": 0.125},
        2: {"loss": 0.1, "val_loss": 1 / 3},
    }
    assert again.metric("val_loss") == [0.25, 1 / 3]
    again.on_epoch_end(1, {"loss": 2.0})
    assert path.read_bytes() == b"epoch,loss,val_loss\n1,0.5,0.25\n2,2.0,\n"
    missing = callbacks.EpochHistory(tmp_path / "none.csv")
    missing.read()
    assert missing.rows == {}


def saver(tmp_path, rows, **kwargs):
    history = callbacks.EpochHistory(tmp_path / "history.csv")
    history.rows = rows
    best = callbacks.BestModelSaver(tmp_path / "best.keras", history, **kwargs)
    best.set_model(tiny_model(dropout=None))
    return best


def test_the_best_model_is_saved_when_its_score_improves(tmp_path):
    """Defaults: val_loss, min. An equal score is no improvement; neither is
    a missing or NaN one; the first score is saved even if an earlier run's
    history was better, when no model is on disk."""
    path = tmp_path / "best.keras"
    best = saver(tmp_path, {0: {"val_loss": 0.5}})
    best.on_epoch_end(1, {"loss": 1.0})
    best.on_epoch_end(1, {"val_loss": float("nan")})
    assert not path.exists() and not best.saved_model
    best.on_epoch_end(1, {"val_loss": 0.75})
    assert path.exists() and best.saved_model
    path.write_bytes(b"kept")
    best.history.rows[1] = {"val_loss": 0.75}
    best.on_epoch_end(2, {"val_loss": 0.5})
    assert path.read_bytes() == b"kept"
    best.on_epoch_end(2, {"val_loss": 0.4})
    assert path.read_bytes() != b"kept"
    assert not best.saved_weights


def test_the_best_model_in_max_mode_and_on_disk_from_before(tmp_path):
    path = tmp_path / "best.keras"
    path.write_bytes(b"earlier")
    weights_path = tmp_path / "best.weights.h5"
    weights_path.write_bytes(b"earlier")
    rows = {0: {"acc": 0.5}}
    best = saver(tmp_path, rows, monitor="acc", mode="max", weights_path=weights_path)
    assert best.saved_model and best.saved_weights
    best.on_epoch_end(1, {"acc": 0.25})
    best.on_epoch_end(1, {"acc": 0.5})
    assert path.read_bytes() == b"earlier"
    best.on_epoch_end(1, {"acc": 0.75})
    assert path.read_bytes() != b"earlier"
    assert weights_path.read_bytes() != b"earlier"
    assert not saver(
        tmp_path, {}, weights_path=tmp_path / "no.weights.h5"
    ).saved_weights


def test_a_mode_other_than_min_or_max_is_refused(tmp_path):
    with pytest.raises(ValueError) as error:
        callbacks.BestModelSaver(tmp_path / "best.keras", None, mode="best")
    assert str(error.value) == "`mode` must be 'min' or 'max'. Received: mode=best"


def test_keep_trained_weights_copies_the_best_or_saves_the_last(tmp_path):
    backup = callbacks.TrainingBackup(tmp_path / "backup")
    backup.backup_dir.mkdir()
    backup.best_weights_path.write_bytes(b"best")
    model = tiny_model(dropout=None)
    best = types.SimpleNamespace(saved_weights=True)
    trained = tmp_path / "trained.weights.h5"
    callbacks.keep_trained_weights(model, best, backup, trained)
    assert trained.read_bytes() == b"best"
    best.saved_weights = False
    callbacks.keep_trained_weights(model, best, backup, trained)
    loaded = tiny_model(dropout=None)
    loaded.load_weights(trained)
    for got, want in zip(weights(loaded), weights(model)):
        np.testing.assert_array_equal(got, want)


def test_best_epoch_and_patience_by_hand():
    nan = float("nan")
    rows = {
        0: {"v": nan},
        1: {"v": 2.0},
        2: {"loss": 1.0},
        3: {"v": 1.0},
        4: {"v": 1.0},
    }
    assert callbacks.best_epoch(rows, "v", "min") == 3
    assert callbacks.best_epoch(rows, "v", "max") == 1
    assert callbacks.best_epoch(rows, "other", "min") is None
    # min: best 3, one later score; max: best 1, two later scores (2 has none).
    assert not callbacks.patience_ran_out(rows, "v", "min", 2)
    assert callbacks.patience_ran_out(rows, "v", "min", 1)
    assert callbacks.patience_ran_out(rows, "v", "max", 2)
    assert not callbacks.patience_ran_out(rows, "v", "max", 3)
    assert not callbacks.patience_ran_out(rows, "v", "max", None)
    assert not callbacks.patience_ran_out(rows, "other", "max", 1)
    assert not callbacks.patience_ran_out({}, "v", "max", None)


def test_step_path_names_each_backend_and_compilation(monkeypatch):
    model = types.SimpleNamespace
    cases = [
        (
            "torch",
            model(jit_compile=True, uses_compiled_torch_steps=True),
            "PyTorch, compiled (the library's recorded step in torch.compile)",
        ),
        ("torch", model(jit_compile=True), "PyTorch, Keras' torch.compile of its step"),
        (
            "torch",
            model(jit_compile=False),
            "PyTorch, eager (compiled by default on CUDA devices only)",
        ),
        ("tensorflow", model(jit_compile=False), "TensorFlow, tf.function without XLA"),
        ("tensorflow", model(jit_compile=True), "TensorFlow, XLA"),
        ("jax", model(jit_compile=True), "JAX, XLA"),
        ("jax", model(jit_compile=False), "JAX, XLA"),
    ]
    for backend, compiled, words in cases:
        monkeypatch.setattr(keras.backend, "backend", lambda name=backend: name)
        assert callbacks.step_path(compiled) == words


def test_the_checkpoint_time_from_a_fake_clock(tmp_path, monkeypatch, capsys):
    readings = iter([10.0, 10.25])
    clock = types.SimpleNamespace(perf_counter=lambda: next(readings))
    monkeypatch.setattr(callbacks, "time", clock)
    backup = callbacks.TrainingBackup(tmp_path)
    backup.set_model(tiny_model(dropout=None))
    backup.on_epoch_end(0)
    assert capsys.readouterr().out == "Checkpoint saved in 0.25 s.\n"
    assert backup.completed_epochs() == 1


@pytest.mark.parametrize(
    "content, reason",
    [
        (b'{"epoch": 0}', "no epoch: epoch 0"),
        (b'{"epoch": "2"}', "no epoch: epoch '2'"),
        (b'{"step": 2}', "no epoch: 'epoch'"),
        (b"[2]", "no epoch: list indices must be integers or slices, not str"),
        (b"", "no epoch: Expecting value: line 1 column 1 (char 0)"),
        (b'{"epoch": 2}\xff', "not UTF-8 text"),
        (None, "Is a directory"),
    ],
)
def test_a_damaged_latest_json_is_refused(tmp_path, content, reason):
    backup = callbacks.TrainingBackup(tmp_path)
    if content is None:
        backup.latest_path.mkdir()
    else:
        backup.latest_path.write_bytes(content)
    with pytest.raises(SystemExit) as exit:
        backup.completed_epochs()
    assert str(exit.value) == f"{tmp_path}/latest.json is damaged ({reason}); {RESTART}"


def test_a_latest_json_unreadable_without_a_reason(tmp_path, monkeypatch):
    def unreadable(self, encoding=None):
        raise OSError("no strerror")

    backup = callbacks.TrainingBackup(tmp_path)
    backup.latest_path.write_text('{"epoch": 2}')
    monkeypatch.setattr(pathlib.Path, "read_text", unreadable)
    with pytest.raises(SystemExit) as exit:
        backup.completed_epochs()
    reason = "unreadable"
    assert str(exit.value) == f"{tmp_path}/latest.json is damaged ({reason}); {RESTART}"


def test_latest_json_is_read_as_utf8_under_an_ascii_locale(tmp_path):
    import locale

    backup = callbacks.TrainingBackup(tmp_path)
    backup.latest_path.write_bytes('{"epoch": "é"}'.encode())
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        with pytest.raises(SystemExit) as exit:
            backup.completed_epochs()
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    reason = "no epoch: epoch 'é'"
    assert str(exit.value) == f"{tmp_path}/latest.json is damaged ({reason}); {RESTART}"


def test_the_first_epoch_and_none(tmp_path):
    backup = callbacks.TrainingBackup(tmp_path)
    assert backup.completed_epochs() == 0
    (tmp_path / "latest.json").write_text('{"epoch": 1}')
    assert backup.completed_epochs() == 1


def test_damaged_seed_states_are_refused(tmp_path, monkeypatch):
    backup = callbacks.TrainingBackup(tmp_path)
    backup.set_model(tiny_model())
    backup.save_epoch(0)
    seeds = tmp_path / "epoch-1.seeds.npz"
    np.savez(seeds, other=np.zeros(2))
    with pytest.raises(SystemExit) as exit:
        backup.restore()
    reason = "'state_0'"
    assert str(exit.value) == f"{seeds} is damaged ({reason}); {RESTART}"

    def unreadable(path):
        raise OSError()

    monkeypatch.setattr(np, "load", unreadable)
    with pytest.raises(SystemExit) as exit:
        backup.restore()
    assert str(exit.value) == f"{seeds} is damaged (OSError); {RESTART}"


class FailingModel:
    optimizer = None

    def __init__(self, error):
        self.error = error

    def load_weights(self, path):
        raise self.error


@pytest.mark.parametrize(
    "error, reason",
    [
        (ValueError("  first line\nsecond line"), "first line"),
        (KeyError(""), "''"),
        (OSError(""), "OSError"),
    ],
)
def test_load_weights_names_the_file_and_the_first_line(tmp_path, error, reason):
    path = tmp_path / "w.weights.h5"
    with pytest.raises(SystemExit) as exit:
        callbacks.load_weights(FailingModel(error), path)
    assert str(exit.value) == f"{path} is damaged ({reason}); {RESTART}"


def test_loaded_weights_bring_the_optimizer_state(tmp_path):
    """A compiled model whose optimizer has not built yet gets the saved
    optimizer's iterations too, and one whose optimizer has built."""
    trained = tiny_model(dropout=None)
    trained.fit(X, Y, epochs=1, batch_size=4, verbose=0)
    path = tmp_path / "w.weights.h5"
    callbacks.save_weights(trained, path)
    fresh = tiny_model(dropout=None)
    callbacks.load_weights(fresh, path)
    assert int(keras.ops.convert_to_numpy(fresh.optimizer.iterations)) == 2
    callbacks.load_weights(fresh, path)  # built already
    assert int(keras.ops.convert_to_numpy(fresh.optimizer.iterations)) == 2


def test_weights_saved_into_new_folders_and_by_a_process_that_does_not_write(
    tmp_path, monkeypatch
):
    model = tiny_model(dropout=None)
    path = tmp_path / "a" / "b" / "w.weights.h5"
    callbacks.save_weights(model, path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["w.weights.h5"]
    monkeypatch.setattr(callbacks, "is_writer", lambda: False)
    other = tmp_path / "other.weights.h5"
    callbacks.save_weights(model, other)
    given = []
    callbacks.save_model(model, tmp_path / "p", lambda folder: given.append(folder))
    assert not other.exists() and not (tmp_path / "p").exists()
    assert pathlib.Path(given[0]).name == "p"
    assert not pathlib.Path(given[0]).parent.exists()


def test_a_preset_replaces_the_previous_one_and_a_leftover(tmp_path, monkeypatch):
    preset = tmp_path / "best_preset"

    def save(text):
        def write(folder):
            pathlib.Path(folder, "config.json").write_text(text)

        return write

    callbacks.save_model(None, preset, save("first"))
    leftover = tmp_path / ".best_preset-old"
    leftover.mkdir()
    (leftover / "config.json").write_text("older")
    callbacks.save_model(None, preset, save("second"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best_preset"]
    assert (preset / "config.json").read_text() == "second"

    class Full(OSError):
        pass

    rename = pathlib.Path.rename

    def full(self, target):
        # The new preset's staging folder cannot move in; nothing to put back.
        if self.name.startswith(".new_preset-") and self.name != ".new_preset-old":
            raise Full
        return rename(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", full)
    with pytest.raises(Full):
        callbacks.save_model(None, tmp_path / "new_preset", save("third"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best_preset"]


def number_stream(folder, period=2):
    """Batch k (from 0) of the stream is rows 4k..4k+3 of X and Y, cycled."""
    from _text_input.stream import StepStream

    class Numbers(StepStream):
        def next_batch(self):
            rows = [(4 * self.step + i) % len(X) for i in range(4)]
            return X[rows] + self.step, Y[rows]

    return Numbers(period, folder / "stream" / "0")


def stream_fit(model, folder, recorder):
    return fit(
        model,
        folder,
        recorder,
        x=None,
        y=None,
        batch_size=None,
        stream=number_stream(folder),
        steps_per_epoch=2,
        epochs=4,
    )


def test_a_stream_resumes_from_its_state_and_its_feed_is_closed(tmp_path):
    keras.utils.set_random_seed(5)
    whole = tiny_model()
    stream_fit(whole, tmp_path / "whole", Recorder())
    assert not (tmp_path / "whole" / "stream").exists()

    keras.utils.set_random_seed(5)
    with pytest.raises(KeyboardInterrupt):
        stream_fit(tiny_model(), tmp_path / "run", Recorder(2))
    INTERRUPTED.clear()
    states = sorted(
        int(p.name.split("-")[1]) for p in (tmp_path / "run/stream/0").iterdir()
    )
    # After epoch 3 (steps 5 and 6), the states before step 4 are dropped.
    assert states[:2] == [4, 6]
    keras.utils.set_random_seed(99)
    resumed = tiny_model()
    recorder = Recorder()
    stream_fit(resumed, tmp_path / "run", recorder)
    assert recorder.epochs == [3]
    run, uninterrupted = tmp_path / "run", tmp_path / "whole"
    assert (run / "history.csv").read_text() == (
        uninterrupted / "history.csv"
    ).read_text()
    got = keras.saving.load_model(run / "final.keras")
    want = keras.saving.load_model(uninterrupted / "final.keras")
    for got_weights, want_weights in zip(weights(got), weights(want)):
        np.testing.assert_array_equal(got_weights, want_weights)
    assert not any(t.name == "batch-prefetch" for t in threading.enumerate())


def test_stream_states_dropped_and_restored(tmp_path):
    stream = number_stream(tmp_path, period=2)
    backup = callbacks.TrainingBackup(tmp_path / "backup", stream)
    backup.restore_stream()
    assert stream.step == 0
    for step in (0, 2, 4, 6, 10):
        stream.step = step
        stream.save(stream.snapshot(step))
    backup.drop_stream_states(3)
    assert sorted(p.name for p in stream.snapshots.iterdir()) == [
        "step-10",
        "step-4",
        "step-6",
    ]
    backup.backup_dir.mkdir()
    backup.latest_path.write_text('{"epoch": 3}')
    stream.step = 0
    backup.restore_stream()
    assert stream.step == 6
    backup.latest_path.write_text('{"epoch": 4}')
    folder = stream.snapshot(8)
    with pytest.raises(SystemExit) as exit:
        backup.restore_stream()
    reason = f"[Errno 2] No such file or directory: '{folder}/position.json'"
    assert str(exit.value) == f"{folder} is damaged ({reason}); {RESTART}"

    def unreadable(folder, position):
        raise ValueError("\nthe rest")

    stream.read_state = unreadable
    backup.latest_path.write_text('{"epoch": 5}')
    stream.save(stream.snapshot(10))
    with pytest.raises(SystemExit) as exit:
        backup.restore_stream()
    assert (
        str(exit.value) == f"{stream.snapshot(10)} is damaged (unreadable); {RESTART}"
    )


def test_torch_generator_states_round_trip_cuda_included(monkeypatch):
    """The CPU generator's state and each CUDA device's (faked here: CI has
    no GPU) are saved, and set back on the devices both runs have."""
    torch = pytest.importorskip("torch")
    devices = [
        torch.arange(4, dtype=torch.uint8),
        torch.arange(4, 8, dtype=torch.uint8),
    ]
    set_states = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: devices)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(
        torch.cuda,
        "set_rng_state",
        lambda state, device: set_states.update({device: state}),
    )
    torch.manual_seed(3)
    states = callbacks.torch_rng_states()
    assert sorted(states) == ["torch_cuda_rng_states", "torch_rng_state"]
    np.testing.assert_array_equal(
        states["torch_cuda_rng_states"], [[0, 1, 2, 3], [4, 5, 6, 7]]
    )
    first = torch.rand(3)
    callbacks.set_torch_rng_states(states)
    np.testing.assert_array_equal(torch.rand(3), first)
    # One device now: the first device's state only.
    assert list(set_states) == [0]
    np.testing.assert_array_equal(set_states[0], [0, 1, 2, 3])
