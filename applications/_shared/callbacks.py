"""Resumable training: the callbacks that keep a run's history, its best
model and its training state on disk, and stop cleanly on Ctrl-C.

A run's directory holds (see also `run_state`):
- `backup/`: the state of the last completed epoch (weights with the
  optimizer, random state) and the best weights so far, while training;
- `history.csv`: one row per completed epoch, kept across resumed runs;
- `best.keras` (or a best preset) and `final.keras`: the best and last models;
- `trained.weights.h5`: the chosen weights, from the end of training until
  the report is written.
Every file is written to a temporary name and renamed into place.
"""

import csv
import io
import json
import math
import pathlib
import shutil
import tempfile
import time
import zipfile

import keras
import numpy as np

from .distribute import barrier
from .files import atomic_path
from .files import is_writer
from .files import make_temporary_dir
from .files import write_text
from .interrupt import INTERRUPTED
from .interrupt import TRAINING
from .lora_backup import LoraFactorBackup
from .lora_backup import lora_layer_variables
from .run_state import BACKUP_DIR
from .run_state import HISTORY_FILE
from .run_state import TRAINED_WEIGHTS
from .run_state import damaged
from .run_state import read_history_rows


class EpochHistory(keras.callbacks.Callback):
    """Keeps `history.csv` with one row per completed epoch.

    Unlike Keras' CSVLogger it rewrites the file atomically, and a resumed run
    keeps the rows of the epochs that finished before the interruption, so
    the file and the plots always cover the whole run.
    """

    def __init__(self, path):
        super().__init__()
        self.path = pathlib.Path(path)
        self.rows = {}

    def read(self):
        """Reads the rows on disk (none without a file)."""
        self.rows = read_history_rows(self.path) if self.path.exists() else {}

    def on_train_begin(self, logs=None):
        self.read()

    def on_epoch_end(self, epoch, logs=None):
        self.rows[epoch] = {k: float(v) for k, v in (logs or {}).items()}
        # Rows past this epoch belong to an earlier, longer run.
        self.rows = {e: r for e, r in self.rows.items() if e <= epoch}
        self.write()

    def write(self):
        names = sorted({name for row in self.rows.values() for name in row})
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["epoch"] + names)
        for epoch in sorted(self.rows):
            row = self.rows[epoch]
            # Counted from 1, as the console, the plots and summary.json count.
            writer.writerow(
                [epoch + 1] + [repr(row[n]) if n in row else "" for n in names]
            )
        write_text(self.path, buffer.getvalue())

    def metric(self, name):
        """The values of `name`, epoch by epoch."""
        return [self.rows[e][name] for e in sorted(self.rows) if name in self.rows[e]]


class BestModelSaver(keras.callbacks.Callback):
    """Saves the model whenever `monitor` improves, atomically.

    `save` is called with a path to write: `model.save` by default, or a
    task's `save_to_preset` for keras-hub models. The model's weights go to
    `weights_path` too, when given, to be restored after training. The best
    value so far comes from `history`, so a resumed run does not overwrite a
    better model from before the interruption.

    What exists on disk is read once, when it is made: in a multi-process
    run process 0 writes while the others run, and every process must make
    the same choices (saving takes part in collectives).
    """

    def __init__(
        self,
        path,
        history,
        monitor="val_loss",
        mode="min",
        save=None,
        weights_path=None,
    ):
        super().__init__()
        if mode not in ("min", "max"):
            raise ValueError(f"`mode` must be 'min' or 'max'. Received: mode={mode}")
        self.path = pathlib.Path(path)
        self.history = history
        self.monitor = monitor
        self.mode = mode
        self.save = save
        self.weights_path = weights_path
        self.saved_model = self.path.exists()
        self.saved_weights = weights_path is not None and weights_path.exists()

    def is_better(self, value, best):
        return value < best if self.mode == "min" else value > best

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None or math.isnan(value):
            return
        earlier = [
            row[self.monitor]
            for e, row in self.history.rows.items()
            if e < epoch and self.monitor in row
        ]
        if all(self.is_better(value, best) for best in earlier) or not (
            self.saved_model
        ):
            save_model(self.model, self.path, self.save)
            self.saved_model = True
            if self.weights_path is not None:
                save_weights(self.model, self.weights_path)
                self.saved_weights = True


def save_weights(model, path):
    """`model.save_weights(path)`, atomically: written in a folder beside
    `path` (Keras wants the name to end in `.weights.h5`), then renamed."""
    path = pathlib.Path(path)
    if is_writer():
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = make_temporary_dir(path.parent, f".{path.name}-")
    else:
        # Saving takes part in collectives: the others save to scratch.
        staging = pathlib.Path(tempfile.mkdtemp())
    try:
        model.save_weights(str(pathlib.Path(staging, path.name)))
        if is_writer():
            pathlib.Path(staging, path.name).replace(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_weights(model, path):
    """`model.load_weights(path)`, or a one-line exit naming the file if it
    is damaged or holds another model's weights."""
    optimizer = model.optimizer
    if optimizer is not None and not optimizer.built:
        # Its state is in the file too.
        optimizer.build(model.trainable_variables)
    try:
        model.load_weights(str(path))
    except (OSError, ValueError, KeyError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise damaged(path, reason or type(error).__name__) from None


def save_model(model, path, save=None):
    """Writes `model` to `path` (a `.keras` file, or a directory for a
    preset) so that no reader sees a half-written one."""
    path = pathlib.Path(path)
    if save is None:
        with atomic_path(path) as temporary:
            model.save(temporary)
        return
    # A preset is a directory: build it beside the target, then swap it in.
    if not is_writer():
        with tempfile.TemporaryDirectory() as scratch:
            save(str(pathlib.Path(scratch, path.name)))
        return
    staging = make_temporary_dir(path.parent, f".{path.name}-")
    try:
        save(str(staging))
        old = path.with_name(f".{path.name}-old")
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
        try:
            staging.rename(path)
        except BaseException:
            # The previous preset goes back in place, not left hidden.
            if old.exists() and not path.exists():
                old.rename(path)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class StopOnInterrupt(keras.callbacks.Callback):
    """Raises KeyboardInterrupt at the first batch end after a Ctrl-C. While
    it trains, the SIGINT handler only sets a flag (see
    `interrupt.INTERRUPTED`). Thread-safe (`async_safe`): Keras may call it
    from a worker thread, and raises what it raises in `fit`'s thread at
    the next step."""

    async_safe = True

    def on_train_begin(self, logs=None):
        TRAINING.set()

    def on_train_end(self, logs=None):
        TRAINING.clear()

    def on_train_batch_end(self, batch, logs=None):
        if INTERRUPTED.is_set():
            TRAINING.clear()
            raise KeyboardInterrupt

    on_test_batch_end = on_predict_batch_end = on_train_batch_end


class TrainingBackup(keras.callbacks.Callback):
    """Keeps the state of the last completed epoch in `backup_dir`, as
    keras.callbacks.BackupAndRestore does, so that an interruption never
    leaves a damaged backup.

    Epoch k's weights (with the optimizer's) and random state (the layers'
    seed generators, and on PyTorch the global generators, the CPU's and
    each CUDA device's, that Keras' unseeded dropout and the library's drop
    path draw from) go to `epoch-k.weights.h5` and
    `epoch-k.seeds.npz`, each written under a temporary name and renamed.
    Then `latest.json`, renamed into place the same way, names epoch k, and
    the files of earlier epochs are removed. A reader follows `latest.json`
    only, so it finds one whole epoch's state: the last, or the one before.
    Fit with `initial_epoch=completed_epochs()`; the state is restored when
    training begins. It goes last among the callbacks: an epoch counts as
    done only once its history row and best model are on disk.

    With a `text_stream.BatchStream`, the stream writes its own state at
    each epoch's end (every process its own, in `stream.snapshots`), and
    `restore_stream()` puts back the one of the backed-up epoch before
    `fit` takes its first batch. In a multi-process run only the writing
    process (`files.is_writer`) keeps the backup.
    """

    def __init__(self, backup_dir, stream=None):
        super().__init__()
        self.backup_dir = pathlib.Path(backup_dir)
        self.stream = stream
        self.latest_path = self.backup_dir / "latest.json"
        # BestModelSaver's copy of the best weights, restored after training.
        self.best_weights_path = self.backup_dir / "best.weights.h5"

    def completed_epochs(self):
        """The epochs the backed-up state has completed (0 without one)."""
        if not self.latest_path.exists():
            return 0
        try:
            epoch = json.loads(self.latest_path.read_text(encoding="utf-8"))["epoch"]
            if not isinstance(epoch, int) or epoch < 1:
                raise ValueError(f"epoch {epoch!r}")
        except UnicodeDecodeError:
            raise damaged(self.latest_path, "not UTF-8 text") from None
        except (ValueError, KeyError, TypeError) as error:
            raise damaged(self.latest_path, f"no epoch: {error}") from None
        except OSError as error:
            raise damaged(self.latest_path, error.strerror or "unreadable") from None
        return epoch

    def epoch_files(self, epoch):
        return (
            self.backup_dir / f"epoch-{epoch}.weights.h5",
            self.backup_dir / f"epoch-{epoch}.seeds.npz",
        )

    def restore_stream(self):
        """Puts the stream where the backed-up epoch left it, if any: each
        process keeps its own stream's states (`BatchStream.snapshots`)."""
        epoch = self.completed_epochs()
        if not epoch or self.stream is None:
            return
        folder = self.stream.snapshot(epoch * self.stream.period)
        try:
            self.stream.restore(folder)
        except Exception as error:  # TensorFlow's and json's errors vary
            reason = (str(error).splitlines() or [""])[0] or "unreadable"
            raise damaged(folder, reason) from None

    def drop_stream_states(self, epoch):
        """Drops this process's stream states before the end of `epoch - 1`
        (1-based): until `latest` says `epoch`, the last one may be needed,
        and another process may still be writing `latest`."""
        keep_from = (epoch - 1) * self.stream.period
        for path in self.stream.snapshots.glob("step-*"):
            if int(path.name.split("-")[1]) < keep_from:
                shutil.rmtree(path, ignore_errors=True)

    def seed_states(self):
        return [
            v for v in self.model.variables if v.path.endswith("seed_generator_state")
        ]

    def restore(self):
        """Loads the backed-up state into the model, if there is one."""
        epoch = self.completed_epochs()
        if not epoch:
            return
        weights_path, seeds_path = self.epoch_files(epoch)
        load_weights(self.model, weights_path)
        states = self.seed_states()
        try:
            with np.load(seeds_path) as saved:
                arrays = {name: saved[name] for name in saved.files}
            values = [arrays[f"state_{i}"] for i in range(len(states))]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise damaged(seeds_path, str(error) or type(error).__name__) from None
        for variable, value in zip(states, values):
            variable.assign(value)
        self.torch_rng_states = {
            name: arrays[name] for name in TORCH_RNG_STATES if name in arrays
        }

    def on_train_begin(self, logs=None):
        self.torch_rng_states = None
        self.restore()

    def on_train_batch_begin(self, batch, logs=None):
        # PyTorch's global generator is set back to the last epoch's end at
        # each epoch's first batch, in a resumed run and an uninterrupted
        # one alike: a DataLoader draws its seed from it when its iteration
        # starts, after `on_epoch_begin`, once a fit for a stream and at
        # every epoch for arrays, so only the state at the first batch is
        # the same in both runs.
        if self.torch_rng_states:
            set_torch_rng_states(self.torch_rng_states)
        self.torch_rng_states = None

    def on_epoch_end(self, epoch, logs=None):
        started = time.perf_counter()
        self.save_epoch(epoch)
        # What a checkpoint costs a run: training stops while it is written.
        print(f"Checkpoint saved in {time.perf_counter() - started:.2f} s.", flush=True)

    def save_epoch(self, epoch):
        weights_path, seeds_path = self.epoch_files(epoch + 1)
        if self.stream is not None:
            self.drop_stream_states(epoch + 1)
        save_weights(self.model, weights_path)
        arrays = {
            f"state_{index}": keras.ops.convert_to_numpy(variable)
            for index, variable in enumerate(self.seed_states())
        }
        if keras.backend.backend() == "torch":
            self.torch_rng_states = torch_rng_states()
            arrays.update(self.torch_rng_states)
        with atomic_path(seeds_path) as temporary:
            np.savez(temporary, **arrays)
        write_text(self.latest_path, json.dumps({"epoch": epoch + 1}) + "\n")
        for path in self.backup_dir.glob("epoch-*"):
            if is_writer() and path not in (weights_path, seeds_path):
                path.unlink(missing_ok=True)


# PyTorch's global generators, which Keras' unseeded dropout (and the
# library's drop path) draw from: the CPU's, and each CUDA device's.
TORCH_RNG_STATES = ("torch_rng_state", "torch_cuda_rng_states")


def torch_rng_states():
    """The states of PyTorch's global generators, as numpy arrays."""
    import torch

    states = {"torch_rng_state": torch.get_rng_state().numpy()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda_states = torch.cuda.get_rng_state_all()
        states["torch_cuda_rng_states"] = np.stack([s.numpy() for s in cuda_states])
    return states


def set_torch_rng_states(states):
    """Sets what `torch_rng_states` returned (CUDA's on the devices that
    both runs have)."""
    import torch

    torch.set_rng_state(torch.from_numpy(states["torch_rng_state"]))
    cuda_states = states.get("torch_cuda_rng_states")
    if cuda_states is not None and torch.cuda.is_available():
        count = min(len(cuda_states), torch.cuda.device_count())
        for device, state in enumerate(cuda_states[:count]):
            torch.cuda.set_rng_state(torch.from_numpy(state), device)


def best_epoch(rows, monitor, mode):
    """The first epoch of `rows` ({epoch: {metric: value}}) with the best
    `monitor` value, or None if no epoch has one."""
    scored = [
        (row[monitor], epoch)
        for epoch, row in sorted(rows.items())
        if monitor in row and not math.isnan(row[monitor])
    ]
    if not scored:
        return None
    sign = 1.0 if mode == "min" else -1.0
    return min(scored, key=lambda pair: (sign * pair[0], pair[1]))[1]


def patience_ran_out(rows, monitor, mode, patience):
    """Whether `monitor` has not improved in the last `patience` scores of
    `rows` (epochs without a score, between evaluations, do not count);
    never when `patience` is None."""
    best = best_epoch(rows, monitor, mode)
    if not patience or best is None:
        return False
    later = [epoch for epoch, row in rows.items() if epoch > best and monitor in row]
    return len(later) >= patience


class EarlyStoppingOnHistory(keras.callbacks.Callback):
    """Stops training once `monitor` has not improved for `patience`
    epochs, judged from the epoch history, so that a resumed run stops
    where an uninterrupted one does. Goes after the history callback."""

    def __init__(self, history, monitor, mode, patience):
        super().__init__()
        self.history = history
        self.monitor, self.mode, self.patience = monitor, mode, patience

    def on_epoch_end(self, epoch, logs=None):
        if patience_ran_out(self.history.rows, self.monitor, self.mode, self.patience):
            print(
                f"Early stop: {self.monitor} has not improved for "
                f"{self.patience} epochs.",
                flush=True,
            )
            self.model.stop_training = True


def keep_trained_weights(model, best, backup, trained_path):
    """The best epoch's weights (or the last, if no epoch had a finite
    score) become the run's trained weights."""
    if not best.saved_weights:
        save_weights(model, trained_path)
    elif is_writer():
        with atomic_path(trained_path) as temporary:
            shutil.copyfile(backup.best_weights_path, temporary)


def fit_on_stream(model, stream, backup, **fit_args):
    """`model.fit(**fit_args)`, on the `stream`'s `feed()` if one is given,
    put back where the `backup` left it first; the feed's prefetching
    thread stops when `fit` ends, not with the process."""
    if is_writer():
        print(f"Training steps: {step_path(model)}.", flush=True)
    feed = None
    if stream is not None:
        backup.restore_stream()
        feed = fit_args["x"] = stream.feed()
    try:
        model.fit(**fit_args)
    finally:
        if hasattr(feed, "close"):
            feed.close()


def step_path(model):
    """How the compiled `model`'s steps run on this backend, in words."""
    backend = keras.backend.backend()
    if backend == "torch":
        if getattr(model, "uses_compiled_torch_steps", False):
            return "PyTorch, compiled (the library's recorded step in torch.compile)"
        if model.jit_compile:
            return "PyTorch, Keras' torch.compile of its step"
        return "PyTorch, eager (compiled by default on CUDA devices only)"
    if backend == "tensorflow" and not model.jit_compile:
        return "TensorFlow, tf.function without XLA"
    return f"{'JAX' if backend == 'jax' else 'TensorFlow'}, XLA"


def fit_resumably(
    model,
    run,
    monitor,
    mode,
    save=None,
    names=("best.keras", "final.keras"),
    patience=None,
    stream=None,
    **fit_args,
):
    """`model.fit(**fit_args)`, resumed from the run's backup, keeping the
    history, the best model (by `monitor` on the validation data) and the
    final one (`names`, written with `save` as in `save_model`) in the run's
    folder. Returns the history, with the best weights in `model`.

    With a `text_stream.BatchStream`, fit trains on its `feed()` (no `x`
    in `fit_args`); its state, and LoRA factors (`lora_backup`), are kept
    with each epoch's backup and restored before a resumed fit.

    Once trained, the best weights are kept as the run's trained weights
    and the stage becomes "trained": a rerun loads them, not training."""
    output_dir = run.output_dir
    run.begin()
    # The other processes read the backup that process 0 may discard.
    barrier("begin")
    history = EpochHistory(output_dir / HISTORY_FILE)
    trained_path = output_dir / TRAINED_WEIGHTS
    if run.stage == "trained":
        history.read()
        load_weights(model, trained_path)
        return history
    backup = TrainingBackup(output_dir / BACKUP_DIR, stream)
    callbacks = [StopOnInterrupt(), *fit_args.pop("callbacks", ()), history]
    if lora_layer_variables(model):
        # Before the backup's callback, which names the epoch done.
        callbacks.append(LoraFactorBackup(backup.backup_dir))
    best = BestModelSaver(
        output_dir / names[0], history, monitor, mode, save, backup.best_weights_path
    )
    callbacks.append(best)
    if patience:
        callbacks.append(EarlyStoppingOnHistory(history, monitor, mode, patience))
    callbacks.append(backup)
    initial_epoch = backup.completed_epochs()
    history.read()
    if initial_epoch < fit_args["epochs"] and not (
        initial_epoch and patience_ran_out(history.rows, monitor, mode, patience)
    ):
        fit_on_stream(
            model,
            stream,
            backup,
            initial_epoch=initial_epoch,
            callbacks=callbacks,
            **fit_args,
        )
    else:
        # Trained, but interrupted before its weights were kept.
        backup.set_model(model)
        backup.restore()
    save_model(model, output_dir / names[1], save)
    keep_trained_weights(model, best, backup, trained_path)
    run.set_stage("trained")
    if is_writer():
        shutil.rmtree(backup.backup_dir, ignore_errors=True)
    if stream is not None:
        stream.discard_states()
    barrier("trained")
    load_weights(model, trained_path)
    return history
