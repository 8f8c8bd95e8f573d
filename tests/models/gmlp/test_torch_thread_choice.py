"""The decoder's thread choice on its own, against a fake clock: when it
tries the thread counts again (the waits double while the choice stays,
start over when it changes, and a step three times slower than the last
one brings the next try forward), and what runs before the first try.

No model: `ThreadChoice` only sets PyTorch's thread count and times the
functions it is given, so these run on every backend where PyTorch is
installed (CI's Python 3.12 lane has JAX only).
"""

import pytest

from keras_gmlp.models.gmlp.decoding import torch_threads

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_clock(monkeypatch):
    """A clock that only the product and the steps advance; the caller's
    thread count is put back after."""
    now = [0.0]
    monkeypatch.setattr(torch_threads.time, "perf_counter", lambda: now[0])
    callers = torch.get_num_threads()
    yield now
    torch.set_num_threads(callers)


def run_steps(clock, product_seconds, step_seconds, threads=2):
    """Runs len(step_seconds) steps of a fresh `ThreadChoice` allowed
    `threads`; the product takes `product_seconds(step, count)`, step i
    (from 1) takes step_seconds[i - 1]. Returns the steps at which the
    counts were tried and each step's thread count."""
    choice = torch_threads.ThreadChoice()
    tried, counts, current = [], [], [0]

    def product():
        if not tried or tried[-1] != current[0]:
            tried.append(current[0])
        clock[0] += product_seconds(current[0], torch.get_num_threads())

    def step(seconds):
        clock[0] += seconds
        return torch.get_num_threads()

    with choice.decoding(threads, product):
        for current[0], seconds in enumerate(step_seconds, start=1):
            counts.append(choice.step(step, seconds))
    return tried, counts


def test_the_waits_between_tries_double_up_to_the_longest(fake_clock):
    assert (torch_threads.FIRST_WAIT, torch_threads.LONGEST_WAIT) == (8, 512)
    # One thread always faster: the choice never changes.
    tried, counts = run_steps(fake_clock, lambda step, count: count, [0.25] * 1600)
    # Tries at the first step, then after 16, 32, ..., 512, 512 steps.
    assert tried == [1, 17, 49, 113, 241, 497, 1009, 1521]
    assert set(counts) == {1}


def test_a_changed_choice_starts_the_waits_over(fake_clock):
    def product_seconds(step, count):
        faster = 2 if step <= 30 else 1  # another process takes a core
        return 1.0 if count == faster else 2.0

    tried, counts = run_steps(fake_clock, product_seconds, [0.25] * 100)
    # 2 chosen at step 1, kept at 9 and 25 (waits 8, 16, 32); 1 chosen at
    # 57, kept at 65 and 81 (waits 8, 16, then 32).
    assert tried == [1, 9, 25, 57, 65, 81]
    assert counts == [2] * 56 + [1] * 44


def test_a_step_over_three_times_the_last_tries_the_counts_at_the_next(fake_clock):
    steps = [0.25] * 20
    steps[4] = 0.75  # three times the last: not a change of load
    steps[9] = 1.0  # four times: the counts are tried at step 11
    tried, _ = run_steps(fake_clock, lambda step, count: count, steps)
    assert tried == [1, 11]


def test_one_allowed_thread_runs_every_step_on_one_without_tries(fake_clock):
    tried, counts = run_steps(fake_clock, lambda step, count: count, [0.25] * 20, 1)
    assert tried == [] and counts == [1] * 20


def test_before_its_first_try_a_fresh_choice_runs_on_one_thread(fake_clock):
    torch.set_num_threads(2)
    choice = torch_threads.ThreadChoice()
    with choice.decoding(2, lambda: None):
        # The prefill runs here, before any step has tried the counts.
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
