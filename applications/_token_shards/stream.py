"""The train batches of a shard set: windows cut from the train shards'
ids, shuffled, each batch a function of (--seed, step), so the state a
checkpoint keeps is the step alone and a resumed run takes exactly the
batches of an uninterrupted one. numpy only: no TensorFlow.

Windows are cut within each shard ([CLS], then `length - 1` ids; a shard's
last partial window is dropped) and numbered across the shards. Every pass
over them (an epoch of the windows) takes them in the order of a
permutation drawn from (seed, pass). The global batch of step k is rows
k * batch ... (k + 1) * batch - 1 of that endless sequence, and input shard
s of S gives its s-th part of it: a process reads only its input shards'
windows, and the global batches do not depend on the number of
processes.
"""

import numpy as np
from _text_input.stream import StepStream


class ShardBatchStream(StepStream):
    """A `StepStream` of the windows of a part's shards.

    Args:
        shards: the train part's `shard_set.ShardSet`.
        length: ids per window, [CLS] included.
        start_id: the id of [CLS].
        batch_size: the global batch (all input shards together).
        input_shards: how many parts each global batch is dealt into.
        seed: the permutations' seed.
        period, snapshots, finish, shards: as `StepStream`'s (`shards`: the
            input shards this process reads).
    """

    def __init__(
        self, part, length, start_id, batch_size, input_shards, seed, **stream_args
    ):
        super().__init__(**stream_args)
        self.part = part
        self.length, self.start_id, self.seed = length, start_id, seed
        counts = part.window_counts(length - 1)
        self.first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.windows = int(counts.sum())
        if self.windows == 0:
            raise ValueError(f"the train shards give no window of {length} ids")
        self.rows = batch_size // input_shards
        self.batch_size = batch_size
        self.order = (None, None)  # (pass, its permutation)

    def permutation(self, epoch):
        if self.order[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch, 3])
            self.order = (epoch, rng.permutation(self.windows).astype("uint32"))
        return self.order[1]

    def window_numbers(self, rows):
        """The windows at positions `rows` of the endless shuffled
        sequence."""
        epochs, positions = np.divmod(rows, self.windows)
        numbers = np.empty_like(rows)
        for epoch in np.unique(epochs):
            chosen = epochs == epoch
            numbers[chosen] = self.permutation(int(epoch))[positions[chosen]]
        return numbers

    def read_windows(self, numbers):
        """The windows numbered `numbers`, as a (len, length) int32 array."""
        body = self.length - 1
        shards = np.searchsorted(self.first, numbers, side="right") - 1
        rows = np.empty((len(numbers), self.length), dtype="int32")
        rows[:, 0] = self.start_id
        for row, (shard, number) in enumerate(zip(shards, numbers)):
            start = (int(number) - int(self.first[shard])) * body
            rows[row, 1:] = self.part.read(int(shard), start, body)
        return rows

    def input_shard_batch(self, step, shard):
        """Input shard `shard`'s part of the global batch of `step`."""
        first = step * self.batch_size + shard * self.rows
        rows = np.arange(first, first + self.rows, dtype="int64")
        return self.read_windows(self.window_numbers(rows))

    def next_batch(self):
        return self.join([self.input_shard_batch(self.step, s) for s in self.shards])
