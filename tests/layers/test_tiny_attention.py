import keras
import numpy as np
import pytest

from keras_gmlp.layers import TinyAttention
from tests import numpy_reference as ref
from tests.layers.helpers import to_numpy


@pytest.mark.parametrize("causal", [False, True])
def test_forward_matches_numpy(rng, causal):
    layer = TinyAttention(attention_dim=4, output_dim=6, causal=causal)
    layer.build((None, None, 8))
    qkv = rng.standard_normal((8, 12))
    out_kernel = rng.standard_normal((4, 6))
    out_bias = rng.standard_normal(6)
    layer.qkv_dense.kernel.assign(qkv)
    layer.output_dense.kernel.assign(out_kernel)
    layer.output_dense.bias.assign(out_bias)
    x = rng.standard_normal((2, 7, 8))
    mask = np.ones((2, 7), bool)
    mask[1, 4:] = False
    got = layer(x.astype("float32"), padding_mask=mask)
    want = ref.tiny_attention(x, qkv, out_kernel, out_bias, mask=mask, causal=causal)
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)


def test_fully_masked_row_stays_finite(rng):
    layer = TinyAttention(4, 6)
    mask = np.zeros((1, 5), bool)
    out = layer(rng.standard_normal((1, 5, 8)).astype("float32"), padding_mask=mask)
    assert np.isfinite(to_numpy(out)).all()


def test_mixed_bfloat16_softmax_in_float32(rng):
    layer = TinyAttention(4, 6, dtype="mixed_bfloat16")
    out = layer(rng.standard_normal((2, 5, 8)).astype("float32"))
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(v.dtype == "float32" for v in layer.weights)
    assert np.isfinite(to_numpy(out)).all()


def test_config_round_trip():
    layer = TinyAttention(64, 768, causal=True)
    clone = TinyAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"attention_dim": 0, "output_dim": 4}, "attention_dim"),
        ({"attention_dim": 4, "output_dim": -2}, "output_dim"),
        ({"attention_dim": 4.5, "output_dim": 4}, "attention_dim"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TinyAttention(**kwargs)


def test_wrong_rank():
    with pytest.raises(ValueError, match="rank 3"):
        TinyAttention(4, 4)(np.zeros((2, 8), "float32"))
