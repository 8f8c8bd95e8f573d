"""Flag helpers of the text programs (standard library only)."""

import sys


def flag_given(argv, flag):
    """Whether `flag` (e.g. "--epochs") is on the command line, so --fast
    can shrink only what the user left at its default."""
    argv = sys.argv[1:] if argv is None else argv
    return any(arg == flag or arg.startswith(flag + "=") for arg in argv)
