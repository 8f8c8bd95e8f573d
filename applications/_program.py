"""What every program in applications/ shares before Keras is imported.

Flags are parsed and the output directory is checked here, with nothing
heavier than the standard library loaded, so `--help` and flag errors answer
at once. The Keras side (callbacks, plots, the run summary) is in
`_training.py`, imported only once the flags are good.
"""

import argparse
import contextlib
import os
import pathlib
import shlex
import signal
import sys
import tempfile
import threading

# Set by the programs' tests and CI: tiny data and one short epoch, enough to
# run every step of a program end to end.
FAST_HELP = "tiny data and model, for a smoke run of every step (what CI runs)"


class _HelpFormatter(
    argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter
):
    """Keeps the module docstring's layout and shows every default."""


def make_parser(doc, default_output_dir):
    """An ArgumentParser whose description is the program's docstring, with
    the flags every program takes."""
    summary, _, details = doc.strip().partition("\n")
    parser = argparse.ArgumentParser(
        description=summary,
        epilog=details.strip(),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--output-dir",
        default=default_output_dir,
        help="where models, history, plots and the summary go; rerunning "
        "with the same directory resumes an interrupted run",
    )
    parser.add_argument(
        "--epochs", type=positive_int, default=None, help="training epochs"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=None, help="batch size"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--fast", action="store_true", help=FAST_HELP)
    return parser


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, received {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, received {value}")
    return value


def non_negative_float(text):
    """argparse type: a float >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, received {text!r}")
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"must be >= 0, received {text}")
    return value


def unit_float(text):
    """argparse type: a float in [0, 1)."""
    value = non_negative_float(text)
    if value >= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), received {text}")
    return value


def prepare_output_dir(parser, path):
    """Creates `path` (and its parents) or checks that it is a writable
    directory, before any work starts; a problem is a flag error."""
    path = pathlib.Path(path).expanduser()
    if path.exists() and not path.is_dir():
        parser.error(f"--output-dir {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        # os.access misreports for root and on some mounts: write a file.
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as error:
        parser.error(f"--output-dir {path} is not writable: {error.strerror}")
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path` with the same suffix (Keras and
    matplotlib choose the format from it); renames it to `path` only if the
    block succeeds, so readers never see a half-written file."""
    path = pathlib.Path(path)
    handle, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.stem}-", suffix=path.suffix
    )
    os.close(handle)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_text(path, text):
    """Writes `text` to `path` atomically."""
    with atomic_path(path) as temporary:
        pathlib.Path(temporary).write_text(text, encoding="utf-8")


# Set by the first Ctrl-C. A KeyboardInterrupt raised from a signal handler
# lands wherever Python happens to be, and inside a `__del__` or a garbage
# collector callback (JAX registers one) it is printed as "Exception ignored
# in" with a traceback and then lost. So while `fit` runs with
# `_training.StopOnInterrupt`, which sets TRAINING, the handler only sets
# INTERRUPTED and the callback raises at the next batch end, in ordinary
# code. Elsewhere, and on a second Ctrl-C, the handler raises at once.
INTERRUPTED = threading.Event()
TRAINING = threading.Event()


def _on_interrupt(signum, frame):
    deferred = TRAINING.is_set() and not INTERRUPTED.is_set()
    INTERRUPTED.set()
    if not deferred:
        raise KeyboardInterrupt


def run(main):
    """Runs `main()`. Ctrl-C prints one line saying how to resume instead of a
    traceback, and exits with status 130 as shells expect."""
    # Only where Ctrl-C would raise anyway: a shell's background job ignores
    # SIGINT, and keeps ignoring it.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)
    try:
        return main()
    except KeyboardInterrupt:
        command = shlex.join(["python3", sys.argv[0]] + sys.argv[1:])
        print(
            "\nInterrupted. Rerun the same command to resume from the last "
            f"completed epoch: {command}",
            file=sys.stderr,
        )
        sys.exit(130)
