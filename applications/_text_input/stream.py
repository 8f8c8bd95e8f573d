"""The text programs' train batches, streamed through tf.data end to end.

The train documents are shuffled with a bounded buffer, turned into
examples (windows, `windows`; or packed pairs), shuffled again with a
bounded buffer, and batched. Memory is bounded by the buffers, not by the
corpus.

`BatchStream` hands the batches to Keras and saves its iterator (shuffle
buffers and position) at the end of each checkpoint period, so that a
resumed run gets the batches an uninterrupted one does; `StepStream`, its
base, is the part that needs no TensorFlow (the token shards' stream is
one too). TensorFlow is imported when a function is called.
"""

import json
import pathlib
import shutil
import time

import keras
import numpy as np
from _shared.files import make_temporary_dir


def training_options(dataset):
    """`dataset` with the options of a checkpointed stream: the tokenizer's
    and the documents' ops hold no state a checkpoint must keep."""
    import tensorflow as tf

    options = tf.data.Options()
    options.deterministic = True
    options.experimental_external_state_policy = (
        tf.data.experimental.ExternalStatePolicy.IGNORE
    )
    return dataset.with_options(options)


def train_batches(documents, prepare, batch_size, seed, buffers):
    """Endless shuffled batches: `documents` shuffled with a buffer of
    `buffers[0]`, repeated, turned into examples by `prepare` (a function
    of datasets), shuffled with a buffer of `buffers[1]`, batched."""
    import tensorflow as tf

    documents = documents.shuffle(buffers[0], seed=seed, reshuffle_each_iteration=True)
    examples = prepare(documents.repeat())
    examples = examples.shuffle(
        buffers[1], seed=seed + 1, reshuffle_each_iteration=True
    )
    batches = examples.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return training_options(batches)


class StepStream:
    """The train batches for `model.fit`, counted in steps, with the
    stream's state saved at the end of each checkpoint period. Subclasses
    give `next_batch()`, and keep what else their state holds with
    `write_state(folder)` (returning facts for position.json) and
    `read_state(folder, position)`. TensorFlow-free.

    The stream gives one batch per input shard this process reads;
    `next_batch()` joins them (this process's share of the global batch)
    and `batches()` is the generator to fit on (with
    `steps_per_epoch=period`). After it produces the last batch of a period
    (step `k * period`), it writes its state to
    `snapshots/step-<k * period>`: Keras may fetch ahead of the step it
    trains (TensorFlow prefetches), so the state is taken where the period
    ends, not when the callback runs. `restore(folder)` continues from one.
    `input_seconds` adds up the time spent taking batches.

    Args:
        period: int, steps per checkpoint period (Keras epoch).
        snapshots: the folder the period ends' states go to.
        finish: optional function `(step, shard, batch) -> (x, y)` of numpy
            arrays, for what depends on the step (the masks).
        shards: the input shards' indices this process reads.
    """

    def __init__(self, period, snapshots, finish=None, shards=(0,)):
        self.period = period
        self.snapshots = pathlib.Path(snapshots)
        self.finish = finish
        self.shards = tuple(shards)
        self.step = 0  # batches taken from the stream
        self.input_seconds = 0.0

    def join(self, parts):
        """This process's batch of its input shards' `parts`, finished."""
        if self.finish is not None:
            parts = [self.finish(self.step, s, p) for s, p in zip(self.shards, parts)]
        return keras.tree.map_structure(lambda *rows: np.concatenate(rows), *parts)

    def batches(self):
        """The batches, taken when asked for (the time counted)."""
        while True:
            yield self.timed_take()

    def timed_take(self):
        started = time.perf_counter()
        batch = self.take()
        self.waited(time.perf_counter() - started)
        return batch

    def waited(self, seconds):
        self.input_seconds += seconds

    def take(self):
        """The next batch, counted; the stream's state is saved where a
        period ends."""
        batch = tuple(self.next_batch())
        self.step += 1
        if self.step % self.period == 0:
            self.save(self.snapshot(self.step))
        return batch

    def feed(self):
        """What `fit` trains on: the batches taken ahead in a background
        thread (`prefetch.Prefetch`; close the generator after `fit`), or
        under a tf.distribute strategy a `tf.data.Dataset` of them that
        rewinds once. Keras' TensorFlow trainer then iterates its input to
        build the model, drops that iterator and iterates again to train
        (`_maybe_symbolic_build`): the batches the first iterator took are
        given again, so training starts where the stream stood.
        `input_seconds` counts the time `fit` waited for them."""
        from _text_input.prefetch import Prefetch

        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            if tf.distribute.has_strategy():
                rewind = RewindOnce(self)
                return tf.data.Dataset.from_generator(
                    rewind.iteration, output_signature=rewind.signature
                )
        return iter(Prefetch(self.take, on_wait=self.waited))

    def discard_states(self):
        """Removes the saved states (and their folder's parent, once empty:
        the processes' shared `stream/`)."""
        shutil.rmtree(self.snapshots, ignore_errors=True)
        if self.snapshots.parent.name == "stream":
            try:
                self.snapshots.parent.rmdir()
            except OSError:  # another process's states are still there
                pass

    def snapshot(self, step):
        return self.snapshots / f"step-{step}"

    def write_state(self, folder):
        return {}

    def read_state(self, folder, position):
        pass

    def save(self, folder):
        """Writes the stream's state to the new folder `folder`, atomically
        (built beside it, then renamed)."""
        folder = pathlib.Path(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = make_temporary_dir(folder.parent, f".{folder.name}-")
        try:
            position = {"step": self.step, **self.write_state(staging)}
            (staging / "position.json").write_text(json.dumps(position))
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            # A failed write (a full disk) leaves no half-made state behind.
            shutil.rmtree(staging, ignore_errors=True)

    def restore(self, folder):
        """Continues from the state `save` wrote to `folder`."""
        folder = pathlib.Path(folder)
        position = json.loads((folder / "position.json").read_text())
        self.read_state(folder, position)
        self.step = position["step"]


class BatchStream(StepStream):
    """A `StepStream` of an endless tf.data stream of tuples of batches (one
    per input shard), whose state is the iterator's (shuffle buffers and
    position), saved with a `tf.train.Checkpoint`.

    Args:
        dataset: a `tf.data.Dataset` of tuples of batches that never ends.
        period, snapshots, finish, shards: as `StepStream`'s.
    """

    def __init__(self, dataset, period, snapshots, finish=None, shards=(0,)):
        import tensorflow as tf

        super().__init__(period, snapshots, finish, shards)
        self.iterator = iter(dataset)
        self.checkpoint = tf.train.Checkpoint(iterator=self.iterator)

    def next_batch(self):
        try:
            parts = next(self.iterator)
        except StopIteration:
            raise ValueError(
                "the train input ran out: an input shard has no documents "
                f"(shards {list(self.shards)}); use fewer --input-shards or more "
                "documents"
            ) from None
        return self.join(
            [keras.tree.map_structure(lambda t: t.numpy(), p) for p in parts]
        )

    def write_state(self, folder):
        """The iterator's checkpoint; a source whose iterator TensorFlow
        cannot checkpoint (a `from_generator` dataset, as
        tensorflow-datasets' mock data) keeps only the step: `read_state`
        then replays the stream up to it, which the fixed seeds make the
        same."""
        import tensorflow as tf

        try:
            self.checkpoint.write(str(folder / "iterator"))
            return {"replay": False}
        except tf.errors.UnimplementedError:
            return {"replay": True}

    def read_state(self, folder, position):
        if position.get("replay"):
            for _ in range(position["step"] - self.step):
                next(self.iterator)
        else:
            self.checkpoint.read(str(folder / "iterator")).expect_partial()


class RewindOnce:
    """A stream's batches for two iterations, the second starting where the
    first did (`BatchStream.feed`). The first keeps what it takes (past
    `limit` batches, the second refuses to start). A tf.data thread may
    still be pulling from the first when the second starts, so each take
    holds a lock."""

    def __init__(self, stream, limit=32):
        import threading

        import tensorflow as tf

        self.stream = stream
        self.limit = limit
        self.start = stream.step
        self.lock = threading.Lock()
        self.calls = 0
        self.taken = [stream.timed_take()]
        self.signature = keras.tree.map_structure(
            lambda a: tf.TensorSpec((None, *a.shape[1:]), a.dtype), self.taken[0]
        )

    def iteration(self):
        with self.lock:
            self.calls += 1
            call = self.calls
            if call > 2 or len(self.taken) > self.limit:
                raise RuntimeError(
                    f"the train stream was iterated {call} times and "
                    f"{len(self.taken)} batches ahead; it replays at most "
                    f"{self.limit} batches once"
                )
            replay = list(self.taken)
            if call == 2:
                self.taken = []
            self.stream.step = self.start + len(replay)
        yield from replay
        while True:
            with self.lock:
                if call != self.calls:  # a newer iteration took over
                    return
                batch = self.stream.timed_take()
                if call == 1 and len(self.taken) <= self.limit:
                    self.taken.append(batch)
            yield batch
