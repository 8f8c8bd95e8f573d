"""Bad data, refused in one line before any training."""


def refuse(message):
    """Bad data: one line and exit status 2 (as a flag error), before any
    training. The --output-dir this start created is removed."""
    import sys

    from _shared.flag_parser import discard_created_output_dir

    discard_created_output_dir()
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def error_line(error):
    """The line of `error` that says what went wrong: its first, or for an
    error raised inside tf.data's functions (whose first line is only "in
    user code:") its last; the error's repr where it has no text."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return repr(error)
    return lines[-1] if lines[0] == "in user code:" else lines[0]
