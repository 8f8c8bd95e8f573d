"""Bad data, refused in one line before any training."""


def refuse(message):
    """Bad data: one line and exit status 2 (as a flag error), before any
    training."""
    import sys

    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
