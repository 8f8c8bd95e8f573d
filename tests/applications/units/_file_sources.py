"""What the text programs' `--train-files` flag makes of a path."""

import types


def train_files_refusal(path):
    """None if `--train-files PATH` is accepted, else the refusal's text."""
    from _text_input import sources

    args = types.SimpleNamespace(
        train_files=str(path), validation_files=None, test_files=None
    )
    try:
        sources.file_sources(args, 0.1)
    except ValueError as error:
        return str(error)
    return None
