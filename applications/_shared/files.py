"""Files written so that no reader ever sees a half-written one."""

import contextlib
import os
import pathlib
import tempfile


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
