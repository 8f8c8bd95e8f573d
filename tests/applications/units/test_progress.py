"""The progress a log file shows (applications/_shared/progress.py): the
figures of each line and period, by value, under a fake clock and a fake
stream; lines every N steps or T seconds; TensorBoard scalars the same.

Cost per backend: milliseconds (no model, no training).
"""

import types

from _shared.progress import TrainingProgress


class FakeClock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


class RecordingScalars:
    def __init__(self):
        self.values = {}
        self.closed = False

    def add_scalar(self, tag, value, step):
        self.values[(tag, step)] = value

    def flush(self):
        pass

    def close(self):
        self.closed = True


def progress(every_steps=3, every_seconds=100.0):
    clock = FakeClock(1000.0)
    stream = types.SimpleNamespace(period=10, input_seconds=0.0)
    lines = []
    scalars = RecordingScalars()
    callback = TrainingProgress(
        stream,
        tokens_per_step=64,
        total_steps=20,
        every_steps=every_steps,
        every_seconds=every_seconds,
        started=960.0,
        scalars=scalars,
        clock=clock,
        print_fn=lambda line, flush=False: lines.append(line),
    )
    return callback, clock, stream, lines, scalars


def step(callback, clock, stream, batch, at, input_seconds, loss=2.5):
    clock.now, stream.input_seconds = at, input_seconds
    callback.on_train_batch_end(batch, {"loss": loss})


def test_lines_every_n_steps_give_the_figures_of_the_steps_since_the_last():
    callback, clock, stream, lines, scalars = progress(every_steps=3)
    clock.now = 1000.0
    callback.on_epoch_begin(0)
    # Step 1 at 1030: 70 s after the start at 960.
    step(callback, clock, stream, 0, 1030.0, 0.5)
    assert lines == [
        "Step 1/20: first step done 70.0 s after the start "
        "(start-up, input and compilation)."
    ]
    step(callback, clock, stream, 1, 1032.0, 0.5)
    step(callback, clock, stream, 2, 1034.0, 0.7)
    assert len(lines) == 1
    # Step 4: 3 steps of 64 tokens in 6 s, 1.5 s of them taking input;
    # 16 steps left at 2 s each.
    step(callback, clock, stream, 3, 1036.0, 2.0, loss=2.25)
    assert lines[1] == (
        "Step 4/20: loss 2.2500, 32 tokens/s, 25.0% of the time taking input, "
        "0:00:32 left."
    )
    assert scalars.values == {
        ("train/loss", 4): 2.25,
        ("train/tokens_per_second", 4): 32.0,
        ("train/input_share", 4): 0.25,
        ("train/seconds_per_step", 4): 2.0,
        ("train/seconds_left", 4): 32.0,
    }
    # The next line counts from step 4.
    for batch, at in ((4, 1037.0), (5, 1038.0), (6, 1039.0)):
        step(callback, clock, stream, batch, at, 2.0)
    assert lines[2].startswith("Step 7/20: loss 2.5000, 64 tokens/s, 0.0% ")
    assert lines[2].endswith(", 0:00:13 left.")


def test_a_line_after_t_seconds_whichever_comes_first():
    callback, clock, stream, lines, _ = progress(every_steps=100, every_seconds=5.0)
    clock.now = 0.0
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1000.0, 0.0)
    step(callback, clock, stream, 1, 1004.0, 0.0)
    assert len(lines) == 1
    # 2 steps in 6 s: 21.3 tokens/s, 1 s taking input; 17 steps left at 3 s.
    step(callback, clock, stream, 2, 1006.0, 1.0)
    assert lines[1] == (
        "Step 3/20: loss 2.5000, 21 tokens/s, 16.7% of the time taking input, "
        "0:00:51 left."
    )


def test_the_period_figures_leave_out_the_first_step_and_keep_its_time():
    callback, clock, stream, lines, scalars = progress(every_steps=100)
    clock.now = 990.0
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1000.0, 3.0)
    for batch in range(1, 10):
        step(callback, clock, stream, batch, 1000.0 + batch, 3.0 + 0.1 * batch)
    # A call Keras' worker threads deliver late changes nothing.
    step(callback, clock, stream, 4, 1009.5, 3.9)
    logs = {"loss": 2.0, "val_loss": 1.5}
    callback.on_epoch_end(0, logs)
    # Steps 2 ... 10: 9 steps of 64 tokens in 9 s, 0.9 s taking input.
    assert logs["tokens_per_second"] == 64.0
    assert abs(logs["input_share"] - 0.1) < 1e-12
    assert logs["step"] == 10.0
    assert logs["seconds_to_first_step"] == 40.0
    assert lines[-1] == (
        "Step 10/20, checkpoint: loss 2, val_loss 1.5; 64 tokens/s, "
        "10.0% of the time taking input."
    )
    assert scalars.values[("period/val_loss", 10)] == 1.5
    assert scalars.values[("period/seconds_to_first_step", 10)] == 40.0
    # The second period: from its own start, and no first-step time again.
    clock.now, stream.input_seconds = 1100.0, 4.0
    callback.on_epoch_begin(1)
    for batch in range(10):
        step(callback, clock, stream, batch, 1100.0 + 2 * (batch + 1), 4.0)
    logs = {"loss": 1.0}
    callback.on_epoch_end(1, logs)
    assert logs["tokens_per_second"] == 32.0
    assert logs["input_share"] == 0.0
    assert "seconds_to_first_step" not in logs
    callback.on_train_end()
    assert scalars.closed


def test_a_resumed_run_counts_steps_from_its_first_period():
    callback, clock, stream, lines, _ = progress(every_steps=2)
    callback.on_epoch_begin(1)
    step(callback, clock, stream, 0, 1001.0, 0.0)
    assert lines[0].startswith("Step 11/20: first step done 41.0 s after")


def test_in_a_terminal_only_the_first_step_and_period_lines_are_printed():
    callback, clock, stream, lines, scalars = progress(every_steps=1)
    callback.write_lines = False
    callback.on_epoch_begin(0)
    for batch in range(3):
        step(callback, clock, stream, batch, 1001.0 + batch, 0.0)
    assert len(lines) == 1 and "first step" in lines[0]
    assert scalars.values[("train/tokens_per_second", 3)] == 64.0


def test_lines_without_a_loss_or_scores_leave_them_out():
    callback, clock, stream, lines, scalars = progress(every_steps=1)
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1001.0, 0.0)
    clock.now = 1002.0
    callback.on_train_batch_end(1, None)
    # 1 step of 64 tokens in 1 s; 18 steps left at 1 s each.
    assert lines[1] == (
        "Step 2/20: 64 tokens/s, 0.0% of the time taking input, 0:00:18 left."
    )
    assert sorted(tag for tag, at in scalars.values if at == 2) == [
        "train/input_share",
        "train/seconds_left",
        "train/seconds_per_step",
        "train/tokens_per_second",
    ]
    for batch in range(2, 10):
        clock.now = 1001.0 + batch
        callback.on_train_batch_end(batch, {})
    assert lines[-1].startswith("Step 10/20: 64 tokens/s, 0.0% ")
    callback.on_epoch_end(0, None)
    assert lines[-1] == (
        "Step 10/20, checkpoint: 64 tokens/s, 0.0% of the time taking input."
    )
    assert scalars.values[("period/seconds_to_first_step", 10)] == 41.0
    callback.on_epoch_begin(1)
    for batch in range(10):
        clock.now = 1011.0 + batch
        callback.on_train_batch_end(batch, {})
    callback.on_epoch_end(1, {"accuracy": 0.5})
    assert lines[-1] == (
        "Step 20/20, checkpoint: 64 tokens/s, 0.0% of the time taking input."
    )


def test_every_line_is_flushed_as_it_is_printed():
    """A log file shows each line when it is written, not when a buffer
    fills."""
    callback, clock, stream, _, _ = progress(every_steps=1)
    flushed = []
    callback.print_fn = lambda line, **kwargs: flushed.append(kwargs)
    callback.on_epoch_begin(0)
    for batch in range(10):
        step(callback, clock, stream, batch, 1001.0 + batch, 0.0)
    callback.on_epoch_end(0, {"loss": 1.0})
    assert len(flushed) == 11  # the first step, 9 lines, the checkpoint
    assert flushed == [{"flush": True}] * 11


def test_the_input_share_is_at_most_all_of_the_time():
    """Input waits counted by other threads can add up to more than the
    time between two lines: the share stops at 100%."""
    callback, clock, stream, lines, scalars = progress(every_steps=1)
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1001.0, 0.0)
    step(callback, clock, stream, 1, 1003.0, 3.0)
    assert lines[1] == (
        "Step 2/20: loss 2.5000, 32 tokens/s, 100.0% of the time taking input, "
        "0:00:36 left."
    )
    assert scalars.values[("train/input_share", 2)] == 1.0


def test_a_late_call_for_the_last_step_changes_nothing():
    callback, clock, stream, lines, scalars = progress(every_steps=100, every_seconds=5)
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1001.0, 0.0)
    step(callback, clock, stream, 1, 1002.0, 0.0)
    # Step 2 again, 8 s later: no line, and step 3 counts from 1002.
    step(callback, clock, stream, 1, 1010.0, 0.0)
    assert len(lines) == 1
    assert callback.last_batch == (2, 1002.0, 0.0)


def test_a_line_exactly_t_seconds_after_the_last():
    callback, clock, stream, lines, _ = progress(every_steps=100, every_seconds=5)
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1000.0, 0.0)
    step(callback, clock, stream, 1, 1004.5, 0.0)
    assert len(lines) == 1
    step(callback, clock, stream, 2, 1005.0, 0.0)
    assert lines[1].startswith("Step 3/20: loss 2.5000, 26 tokens/s, ")


def test_a_first_step_that_ends_its_period_counts_in_it():
    """With one step a period (a checkpoint every step), the first step is
    the whole of its period's figures."""
    callback, clock, stream, lines, scalars = progress(every_steps=100)
    stream.period = 1
    callback.on_epoch_begin(0)
    step(callback, clock, stream, 0, 1002.0, 0.5)
    callback.on_epoch_end(0, None)
    # 1 step of 64 tokens in the 2 s since the period began, 0.5 s input.
    assert lines[-1] == (
        "Step 1/20, checkpoint: 32 tokens/s, 25.0% of the time taking input."
    )
    assert {tag for tag, at in scalars.values if at == 1} == {
        "period/tokens_per_second",
        "period/input_share",
        "period/seconds_to_first_step",
    }
