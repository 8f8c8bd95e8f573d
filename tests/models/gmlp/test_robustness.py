"""Hostile inputs to the text models: poisoned padding, refused batches."""

import keras
import numpy as np
import pytest

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPMaskedLM


def tiny_backbone(causal=False, attention_dim=4):
    return gMLPBackbone(
        vocabulary_size=40,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
        attention_dim=attention_dim,
        causal=causal,
        dropout=0.0,
    )


@pytest.mark.parametrize("causal", [False, True])
def test_nan_embedding_of_the_pad_token_does_not_reach_real_tokens(
    causal, make_batch
):
    """The pad token's embedding row is NaN; the real tokens' outputs and the
    pooled mean still equal those of the same text without padding."""
    backbone = tiny_backbone(causal=causal)
    embeddings = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)
    embeddings[0] = np.nan
    backbone.token_embedding.embeddings.assign(embeddings)
    real_length = 5
    padded = make_batch(40, batch=1, length=8, real_lengths=[real_length])
    unpadded = {k: v[:, :real_length] for k, v in padded.items()}
    got = backbone(padded)
    want = backbone(unpadded)
    sequence = keras.ops.convert_to_numpy(got["sequence_output"])
    np.testing.assert_allclose(
        sequence[:, :real_length],
        keras.ops.convert_to_numpy(want["sequence_output"]),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(got["pooled_output"]),
        keras.ops.convert_to_numpy(want["pooled_output"]),
        rtol=1e-5,
        atol=1e-5,
    )


def test_model_stays_usable_after_predict_and_evaluate_refuse_input(make_batch):
    """On JAX, Keras detaches the weights during predict and evaluate; a step
    that raises (here: text longer than max_sequence_length) must not leave
    them detached."""
    backbone = tiny_backbone()
    batch = make_batch(40, batch=2, length=8)
    too_long = make_batch(40, batch=2, length=9)
    before = backbone.predict(batch, verbose=0)["pooled_output"]
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        backbone.predict(too_long, verbose=0)
    after = backbone.predict(batch, verbose=0)["pooled_output"]
    np.testing.assert_array_equal(after, before)

    masked_lm = gMLPMaskedLM(backbone=backbone, preprocessor=None)
    mask_positions = np.array([[1, 2], [0, 3]], dtype="int32")
    x = dict(batch, mask_positions=mask_positions)
    y = np.array([[5, 6], [7, 8]])
    loss = masked_lm.evaluate(x, y, verbose=0)
    bad_x = dict(too_long, mask_positions=mask_positions)
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        masked_lm.evaluate(bad_x, y, verbose=0)
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        masked_lm.fit(bad_x, y, verbose=0)
    assert masked_lm.evaluate(x, y, verbose=0) == pytest.approx(loss)
    np.testing.assert_array_equal(
        backbone.predict(batch, verbose=0)["pooled_output"], before
    )
