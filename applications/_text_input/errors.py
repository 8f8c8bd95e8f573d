"""Bad data, refused in one line before any training."""


def refuse(message):
    """Bad data: one line and exit status 2 (as a flag error), before any
    training. The --output-dir this start created is removed."""
    import sys

    from _shared.flag_parser import discard_created_output_dir

    discard_created_output_dir()
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
