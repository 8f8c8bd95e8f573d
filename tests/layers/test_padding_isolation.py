"""Whatever padded positions hold (NaN, +Inf, -Inf, huge values), the
outputs at real tokens equal those computed with zeros there."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import TinyAttention
from keras_gmlp.layers import gMLPBlock

REAL_LENGTHS = np.array([5, 6, 2, 3, 7])
LENGTH = 8
# One poison per batch row, so one call covers them all.
POISONS = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38], dtype="float32")


def inputs_and_mask(channels):
    rng = np.random.default_rng(3)
    clean = rng.standard_normal((len(REAL_LENGTHS), LENGTH, channels)).astype("float32")
    mask = np.arange(LENGTH)[None, :] < REAL_LENGTHS[:, None]
    poisoned = np.where(mask[:, :, None], clean, POISONS[:, None, None])
    zeroed = np.where(mask[:, :, None], clean, np.float32(0))
    return poisoned, zeroed, mask


def assert_real_tokens_equal(layer, channels):
    poisoned, zeroed, mask = inputs_and_mask(channels)
    expected = keras.ops.convert_to_numpy(layer(zeroed, padding_mask=mask))
    actual = keras.ops.convert_to_numpy(layer(poisoned, padding_mask=mask))
    assert np.all(np.isfinite(actual[mask]))
    np.testing.assert_allclose(actual[mask], expected[mask], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_spatial_gating_unit_ignores_padded_values(causal):
    sgu = SpatialGatingUnit(
        sequence_length=LENGTH, causal=causal, kernel_initializer="random_normal"
    )
    assert_real_tokens_equal(sgu, 12)


@pytest.mark.parametrize("causal", [False, True])
def test_tiny_attention_ignores_padded_values(causal):
    attention = TinyAttention(attention_dim=4, output_dim=6, causal=causal)
    assert_real_tokens_equal(attention, 10)


@pytest.mark.parametrize(
    "attention_dim, causal",
    [(None, True), (4, False)],
    ids=["gmlp-causal", "amlp-bidirectional"],
)
def test_block_ignores_padded_values(attention_dim, causal):
    block = gMLPBlock(
        hidden_dim=8,
        intermediate_dim=16,
        sequence_length=LENGTH,
        attention_dim=attention_dim,
        causal=causal,
    )
    block.build((None, LENGTH, 8))
    block.spatial_gating_unit.kernel.assign(
        np.random.default_rng(0).standard_normal((1, LENGTH, LENGTH)) / LENGTH
    )
    assert_real_tokens_equal(block, 8)
