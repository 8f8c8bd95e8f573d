"""Property-based checks over the layers' arguments, shapes, lengths, masks
and dtypes: each case gives a correct result or a ValueError/TypeError that
names the argument at fault."""

import keras
import numpy as np
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import gMLPBlock

CHEAP = settings(max_examples=8, deadline=None, derandomize=True)
ANY_INT = st.one_of(st.integers(-3, 9), st.floats(-1, 9), st.none(), st.booleans())


def names_an_argument(error, names):
    return any(name in str(error) for name in names)


@CHEAP
@given(patch_size=ANY_INT, hidden_dim=ANY_INT)
def test_patch_embedding_arguments(patch_size, hidden_dim):
    try:
        layer = PatchEmbedding(patch_size=patch_size, hidden_dim=hidden_dim)
    except (ValueError, TypeError) as error:
        assert names_an_argument(error, ["patch_size", "hidden_dim"]), error
        return
    assert isinstance(patch_size, int) and patch_size > 0
    out = layer(np.zeros((1, 2 * patch_size, patch_size, 3), "float32"))
    assert tuple(out.shape) == (1, 2, hidden_dim)


@CHEAP
@given(
    sequence_length=st.integers(1, 6),
    length=st.integers(0, 8),
    real=st.integers(0, 8),
    causal=st.booleans(),
    attention=st.booleans(),
    dtype=st.sampled_from(["float32", "bfloat16"]),
)
def test_block_lengths_masks_and_dtypes(
    sequence_length, length, real, causal, attention, dtype
):
    block = gMLPBlock(
        hidden_dim=4,
        intermediate_dim=8,
        sequence_length=sequence_length,
        attention_dim=2 if attention else None,
        causal=causal,
        dtype=dtype,
    )
    x = np.random.default_rng(0).standard_normal((2, length, 4)).astype("float32")
    mask = np.arange(length)[None, :] < min(real, length)
    mask = np.repeat(mask, 2, axis=0)
    try:
        out = block(x, padding_mask=mask)
    except ValueError as error:
        assert length == 0 or length > sequence_length, error
        assert "length" in str(error) and "Received" in str(error), error
        return
    assert 1 <= length <= sequence_length
    out = keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))
    assert out.shape == x.shape
    # Real tokens do not depend on the padding after them.
    kept = int(mask[0].sum())
    if kept:
        short = block(x[:, :kept], padding_mask=mask[:, :kept])
        short = keras.ops.convert_to_numpy(keras.ops.cast(short, "float32"))
        tolerance = 1e-5 if dtype == "float32" else 5e-2
        np.testing.assert_allclose(out[:, :kept], short, atol=tolerance, rtol=tolerance)


@CHEAP
@given(sequence_length=ANY_INT, num_heads=ANY_INT, channels=st.integers(1, 9))
def test_spatial_gating_unit_arguments(sequence_length, num_heads, channels):
    try:
        sgu = SpatialGatingUnit(sequence_length=sequence_length, num_heads=num_heads)
        out = sgu(np.ones((1, 1, channels), "float32"))
    except (ValueError, TypeError) as error:
        assert names_an_argument(
            error, ["sequence_length", "num_heads", "inputs", "channel"]
        ), error
        return
    assert tuple(out.shape) == (1, 1, channels // 2)
