"""Where a run in --output-dir stands, checked before any work (standard
library only).

`run_state.json` holds the flags that define the model and its data, and
the run's stage: "training" until the last epoch's weights are on disk,
"trained" while the evaluation, samples, plots and summary are written,
"finished" at the very end. A rerun resumes from the stage it finds, refuses
other model flags, and says that a finished run is finished; --restart
discards it all and trains from scratch.
"""

import csv
import json
import pathlib
import shutil
import time

from .files import write_text
from .flag_parser import keep_output_dir

STATE_FILE = "run_state.json"
HISTORY_FILE = "history.csv"
BACKUP_DIR = "backup"
# The chosen weights (best by the validation split), kept from the end of
# training until the run is finished.
TRAINED_WEIGHTS = "trained.weights.h5"
RESTART = "--restart"
STAGES = ("training", "trained", "finished")


def damaged(path, reason):
    """The one-line exit for a file a rerun cannot use."""
    return SystemExit(
        f"{path} is damaged ({reason}); rerun with {RESTART} to start over"
    )


def read_history_rows(path):
    """{epoch: {metric: value}} of a history CSV, or a one-line exit naming
    the file if it cannot be read."""
    path = pathlib.Path(path)
    rows = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                epoch = int(row.pop("epoch")) - 1  # the file counts from 1
                if None in row or None in row.values():
                    raise ValueError("a row has another number of columns")
                rows[epoch] = {k: float(v) for k, v in row.items() if v}
    except UnicodeDecodeError:
        raise damaged(path, "not UTF-8 text") from None
    except (ValueError, TypeError, KeyError, csv.Error) as error:
        raise damaged(path, f"not a history of epochs: {error}") from None
    except OSError as error:
        raise damaged(path, error.strerror or type(error).__name__) from None
    return rows


class RunState:
    """The run in `output_dir`: its stage and model flags on disk.

    Nothing is written until `begin()`, when training starts: a start that
    is refused before then (bad data, a damaged preset) leaves the folder
    as it was. `resuming` says whether a run of the same flags was found."""

    def __init__(self, output_dir, model_flags, stage="training", restart=False):
        self.output_dir = pathlib.Path(output_dir)
        self.model_flags = model_flags
        self.stage = stage
        self.restart = restart
        self.resuming = False
        # This start of the program: the time to its first step counts from
        # here (a program opens its run first).
        self.started = time.time()

    def begin(self):
        """Discards the earlier run with --restart, and writes the state;
        from here on --output-dir is the run's, kept whatever happens."""
        keep_output_dir()
        if self.restart:
            discard_run(self.output_dir)
            self.restart = False
        self.set_stage(self.stage)

    @property
    def path(self):
        return self.output_dir / STATE_FILE

    def set_stage(self, stage):
        if stage not in STAGES:
            raise ValueError(f"`stage` must be one of {STAGES}. Received: {stage}")
        self.stage = stage
        state = {"stage": stage, "model_flags": self.model_flags}
        write_text(self.path, json.dumps(state, indent=2) + "\n")

    def finish(self):
        """Marks the run finished, and drops the trained weights kept for a
        resumed report."""
        self.set_stage("finished")
        (self.output_dir / TRAINED_WEIGHTS).unlink(missing_ok=True)


def read_state(path):
    """The stored state, None without one, or a one-line exit if damaged."""
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        if state["stage"] not in STAGES or not isinstance(state["model_flags"], dict):
            raise ValueError("unknown stage or flags")
    except UnicodeDecodeError:
        raise damaged(path, "not UTF-8 text") from None
    except (ValueError, KeyError, TypeError) as error:
        raise damaged(path, f"not a run state: {error}") from None
    except OSError as error:
        raise damaged(path, error.strerror or type(error).__name__) from None
    return state


def discard_run(output_dir):
    """Removes what makes `output_dir` resume: backup, trained weights,
    history and state. The other outputs are overwritten by the new run.

    A file that cannot be removed stops the start with one line: a backup
    left behind would resume the new run from the old one. The state goes
    last, so a stopped discard still reads as the earlier run."""
    from .files import is_writer

    if not is_writer():
        return
    for name in (BACKUP_DIR, TRAINED_WEIGHTS, HISTORY_FILE, STATE_FILE):
        path = output_dir / name
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise SystemExit(
                f"{RESTART} could not remove {error.filename or path} ({reason}); "
                "remove it and rerun"
            ) from None


def flag_values(args, names):
    """{name: value} of the flags `names` of `args`, as JSON keeps them
    (paths as strings)."""
    return {
        name: str(value) if isinstance(value, pathlib.PurePath) else value
        for name, value in ((n, getattr(args, n)) for n in names)
    }


def flag_differences(stored, flags):
    """ "--name: stored -> now" for each of `flags` ({name: value}) that
    differs from `stored` ({name: value}, read back)."""
    return [
        f"--{name.replace('_', '-')}: {stored.get(name)!r} -> {value!r}"
        for name, value in flags.items()
        if stored.get(name) != value
    ]


def open_run(args, model_flag_names):
    """Checks --output-dir against the flags before any work, and returns
    its RunState. Exits with one line if the stored model flags differ or a
    file is damaged, and with status 0 if the run is finished. Writes
    nothing (see `RunState.begin`)."""
    output_dir = pathlib.Path(args.output_dir)
    model_flags = flag_values(args, model_flag_names)
    if args.restart:
        return RunState(output_dir, model_flags, restart=True)
    stored = read_state(output_dir / STATE_FILE)
    if stored is not None:
        differences = flag_differences(stored["model_flags"], model_flags)
        if differences:
            raise SystemExit(
                f"{output_dir} holds a run with other model flags "
                f"({'; '.join(differences)}): rerun with the stored ones, use "
                f"another --output-dir, or pass {RESTART} to start over"
            )
        if stored["stage"] == "finished":
            print(
                f"{output_dir} holds a finished run; its results are in "
                f"{output_dir / 'summary.json'}. Pass {RESTART} to train it again."
            )
            raise SystemExit(0)
    if (output_dir / HISTORY_FILE).exists():
        read_history_rows(output_dir / HISTORY_FILE)
    run = RunState(output_dir, model_flags, stored["stage"] if stored else "training")
    run.resuming = stored is not None
    return run
