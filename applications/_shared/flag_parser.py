"""The flag parser of every program and benchmark (standard library only,
no sibling imports: the benchmarks load this file by its path).

Abbreviations are off (`--epoch 1` is an error, not `--epochs 1`), a
misspelled flag gets a "did you mean" suggestion, and a refused start
removes the --output-dir it created (see `created_output_dir`).
"""

import argparse
import difflib
import pathlib
import re
import shutil

# The outermost directory that this start created for --output-dir, until
# the run begins (`keep_output_dir`); a refused start removes it.
_CREATED = []


def note_created_output_dir(path):
    """Records `path`, a directory this start created (None: it existed)."""
    _CREATED[:] = [] if path is None else [pathlib.Path(path)]


def keep_output_dir():
    """The run has begun: its --output-dir stays, whatever happens next."""
    _CREATED.clear()


def discard_created_output_dir():
    """A refused start: removes the --output-dir it created, if any; a
    directory that existed before is kept."""
    for path in _CREATED:
        shutil.rmtree(path, ignore_errors=True)
    _CREATED.clear()


def did_you_mean(parser, message):
    """`message`, and for an unrecognized flag close to one of `parser`'s,
    "--epoch: did you mean --epochs?"."""
    prefix = "unrecognized arguments:"
    if not message.startswith(prefix):
        return message
    # argparse's usage line lists every flag it shows (its public view).
    known = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", parser.format_usage())))
    hints = []
    for word in message[len(prefix) :].split():
        name = word.partition("=")[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if name.startswith("--") and close:
            hints.append(f"{name}: did you mean {close[0]}?")
    return "; ".join([message, *hints])


class FlagParser(argparse.ArgumentParser):
    """argparse without abbreviations, with "did you mean" for a misspelled
    flag, and with errors in two lines (a short usage and the reason):
    argparse's own usage lists every flag, which buries the reason."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        note_created_output_dir(None)

    def error(self, message):
        discard_created_output_dir()
        self.exit(
            2,
            f"usage: {self.prog} [flags] (--help lists them)\n"
            f"{self.prog}: error: {did_you_mean(self, message)}\n",
        )
