"""Commands the programs print (a rerun after Ctrl-C, the program that
makes a missing preset), written so that they run as printed: with the
Python that runs this program, as the README's set-up names it
(`.venv/bin/python`), not a `python3` that may lack the packages."""

import os
import shlex
import sys


def python_command(*arguments):
    """`.venv/bin/python ARGUMENTS...`: this interpreter, relative to the
    working directory where it lies below it, absolute otherwise; `python3`
    (found on PATH) where Python cannot tell its own path."""
    python = sys.executable
    if not python:
        return shlex.join(["python3", *arguments])
    relative = os.path.relpath(python)
    if not relative.startswith(os.pardir):
        python = relative if os.sep in relative else f".{os.sep}{relative}"
    return shlex.join([python, *arguments])
