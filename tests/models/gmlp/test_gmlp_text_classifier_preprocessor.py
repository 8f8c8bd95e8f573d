import keras
import numpy as np

from keras_gmlp.models import gMLPTextClassifierPreprocessor


def numpy_tree(x):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, x)


def test_single_sentences(tokenizer):
    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=12)
    x = numpy_tree(preprocessor(["the value of", "the object"]))
    words = [np.asarray(tokenizer(s)).tolist() for s in ("the value of", "the object")]
    for row, ids in enumerate(words):
        expected = [tokenizer.cls_token_id, *ids, tokenizer.sep_token_id]
        expected += [tokenizer.pad_token_id] * (12 - len(expected))
        np.testing.assert_array_equal(x["token_ids"][row], expected)
        np.testing.assert_array_equal(
            x["padding_mask"][row], np.array(expected) != tokenizer.pad_token_id
        )
    np.testing.assert_array_equal(x["segment_ids"], 0)


def test_sentence_pairs_with_labels(tokenizer):
    import tensorflow as tf

    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=12)
    first, second = tf.constant(["the value"]), tf.constant(["of the object"])
    x, y = preprocessor((first, second), [1])
    x = numpy_tree(x)
    a = np.asarray(tokenizer("the value")).tolist()
    b = np.asarray(tokenizer("of the object")).tolist()
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    expected = [cls, *a, sep, *b, sep]
    n = len(expected)
    np.testing.assert_array_equal(x["token_ids"][0, :n], expected)
    np.testing.assert_array_equal(
        x["segment_ids"][0, :n], [0] * (len(a) + 2) + [1] * (len(b) + 1)
    )
    assert int(np.asarray(y)[0]) == 1


def test_tf_data_map(tokenizer, corpus):
    import tensorflow as tf

    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=16)
    ds = tf.data.Dataset.from_tensor_slices((corpus[:4], [0, 1, 0, 1]))
    x, y = next(iter(ds.batch(4).map(preprocessor)))
    assert x["token_ids"].shape == (4, 16) and y.shape == (4,)
