"""The types of the programs' numeric flags: each parses one value and
checks its range, or raises argparse's error. Standard library only, and
imports nothing of the programs, so that the flags of every program and of
distribution (`flags`, `distribute`) read them without importing each
other."""

import argparse
import math


def _number(text, kind):
    """`text` as a finite `kind` (int or float), or an argparse error."""
    try:
        value = kind(text)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(
            f"expected {noun}, received {text!r}"
        ) from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, received {text!r}")
    return value


def _checked(value, text, allowed, range_text):
    if not allowed(value):
        raise argparse.ArgumentTypeError(f"must be {range_text}, received {text!r}")
    return value


def positive_int(text):
    """argparse type: an integer >= 1."""
    return _checked(_number(text, int), text, lambda v: v >= 1, "at least 1")


def non_negative_int(text):
    """argparse type: an integer >= 0."""
    return _checked(_number(text, int), text, lambda v: v >= 0, ">= 0")


def seed_int(text):
    """argparse type: a random seed, an integer in [0, 2**32) (NumPy's
    global seed, which Keras sets, takes no other)."""
    return _checked(_number(text, int), text, lambda v: 0 <= v < 2**32, "in [0, 2**32)")


def positive_float(text):
    """argparse type: a finite number > 0."""
    return _checked(_number(text, float), text, lambda v: v > 0, "above 0")


def non_negative_float(text):
    """argparse type: a finite number >= 0."""
    return _checked(_number(text, float), text, lambda v: v >= 0, ">= 0")


def unit_float(text):
    """argparse type: a number in [0, 1), e.g. a dropout rate."""
    return _checked(_number(text, float), text, lambda v: 0 <= v < 1, "in [0, 1)")


def fraction(text):
    """argparse type: a number in (0, 1), a share of the data that must
    leave something on both sides."""
    return _checked(
        _number(text, float), text, lambda v: 0 < v < 1, "in (0, 1), both excluded"
    )
