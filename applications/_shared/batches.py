"""Batches whose order depends only on the seed and the epoch, so a resumed
run sees what an uninterrupted one does."""

import keras
import numpy as np


class EpochSeededBatches(keras.utils.PyDataset):
    """Batches of in-memory arrays, shuffled in an order that depends only
    on (seed, epoch).

    A run resumed at epoch k then sees the same batches as an uninterrupted
    run does at epoch k, which a shuffle driven by a global random state
    cannot promise; so fit it with `shuffle=False` (Keras would reorder the
    batches from the global state) and its `epoch_callback()`. `x` and `y`
    are arrays or (nested) dicts/tuples of arrays with the same first
    dimension.

    `share=(index, count)` gives process `index` of `count` its part of
    each batch (the batch's rows split into `count` equal parts); a last
    partial batch that does not split evenly is left out.
    """

    def __init__(self, x, y=None, batch_size=32, seed=0, shuffle=True, share=(0, 1)):
        super().__init__()
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.share = share
        self.size = len(keras.tree.flatten(x)[0])
        self.epoch = 0

    def __len__(self):
        full, rest = divmod(self.size, self.batch_size)
        return full + (rest > 0 and rest % self.share[1] == 0)

    def order(self):
        if not self.shuffle:
            return np.arange(self.size)
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.size)

    def __getitem__(self, index):
        rows = self.order()[index * self.batch_size : (index + 1) * self.batch_size]
        part, parts = self.share
        rows = np.split(rows, parts)[part]

        def take(array):
            return np.asarray(array)[rows]

        x = keras.tree.map_structure(take, self.x)
        if self.y is None:
            return (x,)
        return x, keras.tree.map_structure(take, self.y)

    def epoch_callback(self):
        """A callback that tells this dataset which epoch is starting."""
        dataset = self

        class SetEpoch(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                dataset.epoch = epoch

        return SetEpoch()


def in_order(x, y, batch_size):
    """Batches of in-memory arrays in their order, to evaluate or predict
    on. Keras would batch arrays itself, on TensorFlow with a parallel
    tf.data map; under `tf.config.experimental.enable_op_determinism()`
    TensorFlow rewrites that map into a sequential one and keeps an
    attribute the sequential op does not have, which it then reports as an
    error-level "NodeDef mentions attribute use_unbounded_threadpool" line
    (see also _image_classifier.data.parallel_calls). A PyDataset takes
    neither path, on every backend."""
    return EpochSeededBatches(x, y, batch_size=batch_size, shuffle=False)
