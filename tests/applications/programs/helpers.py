"""Running the programs in applications/ the way a user does: in a subprocess.

Every helper runs the program with the backend of the test session
(`keras.backend.backend()`), this checkout's `keras_gmlp` first on the
path, and unbuffered output, and returns what the program printed.
"""

import os
import pathlib
import signal
import subprocess
import sys

import keras

ROOT = pathlib.Path(__file__).resolve().parents[3]
APPLICATIONS = ROOT / "applications"

# Runs a program under tensorflow-datasets' mock data: fake examples of the
# dataset's real features, no files and no network. argv[1] is the script;
# `program_env(mock_tfds=True)` puts its folder on PYTHONPATH, where running
# the script itself would put it first on sys.path.
# Mock data needs no download, so the program's check for a network to
# download with (which a machine without one fails) is answered yes.
_MOCK_TFDS = """
import runpy, sys
import tensorflow_datasets as tfds
from _shared import tfds_names
tfds_names.network_reachable = lambda: True
script = sys.argv[1]
sys.argv = sys.argv[1:]
with tfds.testing.mock_data(num_examples={num_examples}):
    runpy.run_path(script, run_name="__main__")
"""


def program_path(name):
    """The path of `applications/<name>` (`.py` may be omitted)."""
    name = name if name.endswith(".py") else f"{name}.py"
    return APPLICATIONS / name


def program_env(mock_tfds=False, **overrides):
    """The environment the programs run in: the session's backend, this
    checkout importable (and applications/ with `mock_tfds`), no
    progress-bar buffering."""
    env = dict(os.environ)
    env["KERAS_BACKEND"] = keras.backend.backend()
    paths = [str(APPLICATIONS)] if mock_tfds else []
    env["PYTHONPATH"] = os.pathsep.join(
        paths + [str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    env["PYTHONUNBUFFERED"] = "1"
    env.update({key: str(value) for key, value in overrides.items()})
    return env


def program_command(name, args, mock_tfds_examples=None):
    script = str(program_path(name))
    args = [str(arg) for arg in args]
    if mock_tfds_examples is None:
        return [sys.executable, script] + args
    code = _MOCK_TFDS.format(num_examples=int(mock_tfds_examples))
    return [sys.executable, "-c", code, script] + args


def run_program(name, *args, timeout=600, mock_tfds_examples=None, env=None):
    """Runs `applications/<name>` with `args` to completion.

    Args:
        name: the program's file name, e.g. "train_image_classifier".
        *args: its command-line arguments.
        timeout: seconds before the run counts as hung (raises
            `subprocess.TimeoutExpired`).
        mock_tfds_examples: if given, run under
            `tfds.testing.mock_data(num_examples=...)`.
        env: extra environment variables.

    Returns:
        The `subprocess.CompletedProcess`, with text `stdout` and `stderr`.
    """
    return subprocess.run(
        program_command(name, args, mock_tfds_examples),
        cwd=ROOT,
        env=program_env(mock_tfds_examples is not None, **(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_program(name, *args, env=None):
    """Starts `applications/<name>` without waiting (to interrupt it);
    stdout and stderr are pipes of text.

    The child gets the default SIGINT handling, as a program started from a
    terminal has: a shell's background job (CI runs the suites that way)
    ignores SIGINT, children inherit that, and Python then never turns
    SIGINT into KeyboardInterrupt."""
    return subprocess.Popen(
        program_command(name, args),
        cwd=ROOT,
        env=program_env(**(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def describe(result):
    """The output of a finished run, for assertion messages."""
    return (
        f"exit status {result.returncode}\n--- stdout ---\n{result.stdout[-3000:]}"
        f"\n--- stderr ---\n{result.stderr[-3000:]}"
    )
