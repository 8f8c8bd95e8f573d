"""Batches taken ahead in a background thread
(applications/_text_input/prefetch.py): the same batches in the same
order, the consumer's waits counted, the thread's errors raised in the
consumer, and the thread stopped when the generator is closed.

Cost per backend: milliseconds.
"""

import threading
import time

import keras
import numpy as np
import pytest
from _text_input.prefetch import Prefetch


def counting_take(limit=None):
    taken = []

    def take():
        if limit is not None and len(taken) == limit:
            raise ValueError("the train input ran out")
        taken.append(len(taken))
        return (np.full((2, 3), len(taken) - 1, dtype="int32"),)

    return take, taken


def test_batches_come_in_order_taken_ahead_and_the_thread_stops_on_close():
    take, taken = counting_take()
    waits = []
    batches = iter(Prefetch(take, depth=2, on_wait=waits.append))
    firsts = [int(next(batches)[0][0, 0]) for _ in range(5)]
    assert firsts == [0, 1, 2, 3, 4]
    deadline = time.time() + 10
    while len(taken) < 8 and time.time() < deadline:
        time.sleep(0.01)
    # Five handed out, two ready, one held by the thread until there is room.
    assert len(taken) == 8
    assert len(waits) == 5 and all(w >= 0 for w in waits)
    # A daemon thread: it does not keep an interrupted program alive.
    named = [t for t in threading.enumerate() if t.name == "batch-prefetch"]
    assert [t.daemon for t in named] == [True]
    batches.close()
    assert not [t for t in threading.enumerate() if t.name == "batch-prefetch"]
    assert len(taken) == 8


def test_on_pytorch_batches_are_placed_as_tensors_ahead():
    take, _ = counting_take()
    batches = iter(Prefetch(take))
    (first,) = next(batches)
    batches.close()
    if keras.backend.backend() == "torch":
        import torch

        assert isinstance(first, torch.Tensor)
    else:
        assert isinstance(first, np.ndarray)


def test_an_error_of_the_input_is_raised_where_fit_takes_the_batch():
    take, _ = counting_take(limit=2)
    batches = iter(Prefetch(take))
    next(batches), next(batches)
    with pytest.raises(ValueError, match="the train input ran out"):
        next(batches)


def test_two_batches_are_held_ready_by_default_and_waits_are_timed(monkeypatch):
    """A fake clock that moves 0.25 s a reading (the consumer reads it
    before and after each wait)."""
    import itertools

    readings = itertools.count()
    monkeypatch.setattr(time, "perf_counter", lambda: 100 + next(readings) * 0.25)
    take, taken = counting_take()
    waits = []
    batches = iter(Prefetch(take, on_wait=waits.append))
    next(batches)
    deadline = time.time() + 10
    while len(taken) < 4 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # time to take a fifth, were there room
    # One handed out, two ready, one held by the thread until there is room.
    assert len(taken) == 4
    batches.close()
    assert waits == [0.25]


def test_elsewhere_than_pytorch_the_batches_are_handed_as_taken(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    take, _ = counting_take()
    given = []

    def taking():
        given.append(take())
        return given[-1]

    batches = iter(Prefetch(taking))
    assert next(batches) is given[0]
    batches.close()


def test_closing_before_iterating_takes_nothing():
    take, taken = counting_take()
    prefetch = Prefetch(take)
    prefetch.close()
    assert taken == []
