import keras
import numpy as np
import pytest

from keras_gmlp.models import gMLPMaskedLMPreprocessor
from keras_gmlp.models import gMLPTextClassifierPreprocessor


def numpy_tree(x):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, x)


@pytest.fixture
def sentences(corpus):
    return corpus[:4]


def test_masks_only_real_tokens(tokenizer, sentences):
    preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer,
        sequence_length=24,
        mask_selection_rate=0.3,
        mask_selection_length=6,
    )
    x, y, sample_weight = numpy_tree(preprocessor(sentences))
    assert set(x) == {"token_ids", "segment_ids", "padding_mask", "mask_positions"}
    assert x["token_ids"].shape == (4, 24)
    assert x["mask_positions"].shape == y.shape == sample_weight.shape == (4, 6)
    # The unmasked packing of the same text, by the classifier preprocessor.
    packed = numpy_tree(
        gMLPTextClassifierPreprocessor(tokenizer, sequence_length=24)(sentences)
    )
    np.testing.assert_array_equal(x["padding_mask"], packed["padding_mask"])
    special = set(tokenizer.special_token_ids)
    for row in range(4):
        chosen = x["mask_positions"][row][sample_weight[row] > 0]
        assert len(chosen) > 0
        np.testing.assert_array_equal(
            y[row][sample_weight[row] > 0], packed["token_ids"][row][chosen]
        )
        assert not special & set(packed["token_ids"][row][chosen].tolist())
        unchosen = np.setdiff1d(np.arange(24), chosen)
        np.testing.assert_array_equal(
            x["token_ids"][row][unchosen], packed["token_ids"][row][unchosen]
        )
    assert np.mean(x["token_ids"] == tokenizer.mask_token_id) > 0


def test_sentence_pairs_and_tf_data(tokenizer, sentences):
    import tensorflow as tf

    preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=20, mask_selection_length=4
    )
    first, second = tf.constant(sentences[:2]), tf.constant(sentences[2:])
    x, _, _ = numpy_tree(preprocessor(x=(first, second)))
    assert x["segment_ids"].shape == (2, 20)
    assert set(np.unique(x["segment_ids"])) == {0, 1}
    ds = tf.data.Dataset.from_tensor_slices(sentences).batch(2).map(preprocessor)
    x, y, sample_weight = next(iter(ds))
    assert x["token_ids"].shape == (2, 20) and y.shape == (2, 4)


def test_sequence_length_can_change(tokenizer, sentences):
    preprocessor = gMLPMaskedLMPreprocessor(tokenizer, sequence_length=20)
    preprocessor.sequence_length = 17
    x, _, _ = preprocessor(sentences)
    assert tuple(x["token_ids"].shape) == (4, 17)


def test_config_round_trip(tokenizer):
    preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=20, mask_selection_rate=0.2
    )
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(preprocessor)
    )
    assert isinstance(revived, gMLPMaskedLMPreprocessor)
    assert revived.get_config() == preprocessor.get_config()
