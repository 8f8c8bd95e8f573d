"""Files written so that no reader ever sees a half-written one, with the
permissions the umask gives (0644 files and 0755 folders under umask 022),
not the owner-only ones of `tempfile.mkstemp` and `mkdtemp`.

In a multi-process run only process 0 writes outputs (`set_writer`): the
others run the same code, so that they take part in every computation, and
their writes go to a scratch folder that is removed.
"""

import contextlib
import os
import pathlib
import secrets
import tempfile

_WRITER = [True]


def set_writer(writes):
    """Whether this process's `atomic_path` writes reach their paths."""
    _WRITER[0] = bool(writes)


def is_writer():
    return _WRITER[0]


def _unused_name(parent, prefix, suffix):
    return pathlib.Path(parent) / f"{prefix}{secrets.token_hex(6)}{suffix}"


def reserve_temporary_file(parent, prefix, suffix=""):
    """Creates an empty file with a fresh name in `parent`, with the mode the
    umask allows (the kernel applies it to 0666), and returns its path."""
    while True:
        path = _unused_name(parent, prefix, suffix)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return path


def make_temporary_dir(parent, prefix):
    """Creates a folder with a fresh name in `parent`, with the mode the
    umask allows (applied to 0777), and returns its path: a folder that is
    later renamed into place keeps it."""
    while True:
        path = _unused_name(parent, prefix, "")
        try:
            path.mkdir(mode=0o777)
        except FileExistsError:
            continue
        return path


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path` with the same suffix (Keras and
    matplotlib choose the format from it); renames it to `path` only if the
    block succeeds, so readers never see a half-written file. A process
    that does not write (`set_writer`) gets a scratch path instead."""
    path = pathlib.Path(path)
    if not is_writer():
        with tempfile.TemporaryDirectory() as scratch:
            yield os.path.join(scratch, path.name)
        return
    temporary = str(reserve_temporary_file(path.parent, f".{path.stem}-", path.suffix))
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
