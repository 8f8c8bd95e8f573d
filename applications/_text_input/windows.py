"""Documents turned into windows of token ids: tokenized in tf.data, each
document followed by [SEP], cut into windows of a fixed length that run
across document boundaries (as BERT's pretraining data); and the helpers
that count or collect a dataset's elements. TensorFlow is imported when a
function is called.
"""

import keras
import numpy as np


def valid_utf8(text):
    """`text` with bytes that are not UTF-8 replaced by U+FFFD."""
    import tensorflow as tf

    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")


def token_windows(documents, tokenizer, length, pad_last=False):
    """Windows of `length` ids: [CLS], then the documents' tokens, each
    document followed by [SEP], cut across document boundaries. The last
    incomplete window is dropped, or with `pad_last` padded with [PAD] (0),
    so that a small held-out set keeps all its text."""
    import tensorflow as tf

    start = tokenizer.token_to_id("[CLS]")
    end = tokenizer.token_to_id("[SEP]")

    def tokens(text):
        ids = tf.cast(tokenizer(valid_utf8(text)), "int32")
        return tf.concat([ids, [end]], axis=0)

    ids = documents.map(tokens, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    windows = ids.rebatch(length - 1, drop_remainder=not pad_last)

    def window(body):
        padding = tf.zeros([length - 1 - tf.size(body)], "int32")
        return tf.concat([[start], body, padding], axis=0)

    return windows.map(window)


def sample_documents(documents, count, max_bytes):
    """The first `count` of `documents` (a dataset of texts), up to the one
    that reaches `max_bytes` of text: a sample whose memory does not grow
    with the documents' length."""
    import tensorflow as tf

    def before(total, text):
        size = tf.cast(tf.strings.length(text, "BYTE"), "int64")
        return total + size, (total, text)

    sized = documents.take(count).scan(tf.constant(0, "int64"), before)
    return sized.take_while(lambda total, _: total < max_bytes).map(
        lambda _, text: text
    )


def count(dataset):
    """How many elements `dataset` has (one pass, nothing kept)."""
    return int(dataset.reduce(0, lambda total, _: total + 1))


def take_arrays(dataset, limit):
    """The first `limit` elements of a dataset of arrays (or tuples or
    dicts of them), stacked into numpy arrays."""
    elements = list(dataset.take(limit).as_numpy_iterator())
    if not elements:
        return None
    return keras.tree.map_structure(lambda *parts: np.stack(parts), *elements)
