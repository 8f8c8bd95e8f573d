"""Progress of a run counted in steps, as a log file shows it and as
TensorBoard scalars: a line every few steps or seconds (transformers'
`logging_steps`, timm's `log_interval`), one at each checkpoint period's
end, and the time from the program's start to its first step."""

import datetime
import sys
import threading
import time

import keras

from .files import is_writer


class TrainingProgress(keras.callbacks.Callback):
    """Reports training while it runs.

    After the first step, a line says how long the program took to reach
    it (start-up, input and compilation). Then, in a log file, a line every
    `every_steps` steps or `every_seconds` seconds, whichever comes first,
    gives the step, the loss (Keras' mean over the period so far), the
    tokens trained on per second and the share of the time `fit` waited for
    input since the last line, and the time left at that pace. At each
    period's end (a Keras epoch: a checkpoint) the period's tokens per
    second, input share and, in its first period, the seconds to the first
    step go into the logs (history.csv) and a line. The same figures go to
    `scalars` (TensorBoard), if given.

    Its batch hook is thread-safe (`async_safe`): on JAX and PyTorch, Keras
    then converts each step's logs to floats in a worker thread instead of
    holding up the next step (keras.callbacks.CallbackList), and this
    callback reads the loss only at its lines.

    Args:
        stream: the train stream: its `period` (steps per epoch) and
            `input_seconds` (the time `fit` has waited for batches).
        tokens_per_step: the tokens one step trains on.
        total_steps: the run's steps.
        every_steps: steps between lines.
        every_seconds: seconds between lines.
        started: the clock's reading when the program started.
        write_lines: whether to print the step lines (a terminal shows
            Keras' progress bar instead); the first-step and period lines
            are printed either way.
        scalars: None, or a writer with `add_scalar(tag, value, step)`,
            `flush()` and `close()` (`tensorboard_writer`).
        clock: seconds, as `time.time` (a test passes a fake clock).
        print_fn: where lines go.
    """

    async_safe = True

    def __init__(
        self,
        stream,
        tokens_per_step,
        total_steps,
        every_steps,
        every_seconds,
        started,
        write_lines=True,
        scalars=None,
        clock=time.time,
        print_fn=print,
    ):
        super().__init__()
        self.stream = stream
        self.tokens_per_step = tokens_per_step
        self.total_steps = total_steps
        self.every_steps, self.every_seconds = every_steps, every_seconds
        self.started = started
        self.write_lines = write_lines
        self.scalars = scalars
        self.clock = clock
        self.print_fn = print_fn
        self.lock = threading.Lock()
        self.seconds_to_first_step = None
        self.first_reported = False
        self.epoch = 0
        self.window = None  # (step, time, input seconds) where figures start
        self.period_start = self.last_batch = None

    def mark(self, step):
        return (step, self.clock(), self.stream.input_seconds)

    def on_epoch_begin(self, epoch, logs=None):
        with self.lock:
            self.epoch = epoch
            # Validation and checkpoints between periods are not training.
            self.window = self.mark(epoch * self.stream.period)
            self.period_start = self.window
            self.last_batch = self.window

    def on_train_batch_end(self, batch, logs=None):
        with self.lock:
            step = self.epoch * self.stream.period + batch + 1
            if step <= self.last_batch[0]:
                return  # a late call: Keras may dispatch them out of order
            self.last_batch = self.mark(step)
            if self.seconds_to_first_step is None:
                self.first_step(step)
                return
            seconds = self.last_batch[1] - self.window[1]
            due = step - self.window[0] >= self.every_steps
            if due or seconds >= self.every_seconds:
                self.report(step, (logs or {}).get("loss"))

    def first_step(self, step):
        self.seconds_to_first_step = self.last_batch[1] - self.started
        self.print_fn(
            f"Step {step}/{self.total_steps}: first step done "
            f"{self.seconds_to_first_step:.1f} s after the start "
            "(start-up, input and compilation).",
            flush=True,
        )
        # Figures leave out the first step (it compiles), unless it ends
        # its period.
        self.window = self.last_batch
        if step % self.stream.period:
            self.period_start = self.last_batch

    def figures(self, start, end):
        """Tokens per second, input share and seconds per step between two
        marks."""
        steps = end[0] - start[0]
        seconds = max(end[1] - start[1], 1e-9)
        return {
            "tokens_per_second": steps * self.tokens_per_step / seconds,
            "input_share": min(1.0, (end[2] - start[2]) / seconds),
            "seconds_per_step": seconds / max(steps, 1),
        }

    def report(self, step, loss):
        facts = self.figures(self.window, self.last_batch)
        facts["seconds_left"] = (self.total_steps - step) * facts["seconds_per_step"]
        if loss is not None:
            facts["loss"] = float(loss)
        if self.write_lines:
            shown = f"loss {facts['loss']:.4f}, " if loss is not None else ""
            left = datetime.timedelta(seconds=round(facts["seconds_left"]))
            self.print_fn(
                f"Step {step}/{self.total_steps}: {shown}"
                f"{facts['tokens_per_second']:,.0f} tokens/s, "
                f"{facts['input_share']:.1%} of the time taking input, "
                f"{left} left.",
                flush=True,
            )
        self.write_scalars("train", facts, step)
        self.window = self.last_batch

    def on_epoch_end(self, epoch, logs=None):
        with self.lock:
            step = (epoch + 1) * self.stream.period
            facts = self.figures(self.period_start, self.last_batch)
            del facts["seconds_per_step"]
            facts["step"] = float(step)
            if self.seconds_to_first_step is not None and not self.first_reported:
                # In this start's first period only: history.csv keeps it.
                facts["seconds_to_first_step"] = self.seconds_to_first_step
                self.first_reported = True
            if logs is not None:
                logs.update(facts)
            scores = ", ".join(
                f"{name} {value:.4g}"
                for name, value in sorted((logs or {}).items())
                if name == "loss" or name.startswith("val_")
            )
            self.print_fn(
                f"Step {step}/{self.total_steps}, checkpoint: "
                + (f"{scores}; " if scores else "")
                + f"{facts['tokens_per_second']:,.0f} tokens/s, "
                f"{facts['input_share']:.1%} of the time taking input.",
                flush=True,
            )
            self.write_scalars("period", dict(logs or facts), step)

    def on_train_end(self, logs=None):
        if self.scalars is not None:
            self.scalars.close()

    def write_scalars(self, group, facts, step):
        if self.scalars is None:
            return
        for name, value in sorted(facts.items()):
            if name != "step":
                self.scalars.add_scalar(f"{group}/{name}", float(value), step)
        self.scalars.flush()


def tensorboard_writer(folder):
    """A tensorboardX `SummaryWriter` on `folder`, which needs no
    TensorFlow; None in the processes that do not write, or without
    tensorboardX (the `apps` extra installs it), which is said once."""
    if not is_writer():
        return None
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        print(
            "No TensorBoard scalars: tensorboardX is not installed "
            "(pip install tensorboardX).",
            file=sys.stderr,
            flush=True,
        )
        return None
    return SummaryWriter(str(folder))
