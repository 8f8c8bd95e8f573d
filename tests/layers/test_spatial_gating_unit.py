import keras
import numpy as np
import pytest

from keras_gmlp.layers import SpatialGatingUnit
from tests import numpy_reference as ref
from tests.layers.helpers import assign_sgu_weights
from tests.layers.helpers import random_block_weights
from tests.layers.helpers import to_numpy


def _sgu_with_random_weights(rng, length, channels, heads=1, causal=False):
    sgu = SpatialGatingUnit(length, causal=causal, num_heads=heads)
    sgu.build((None, None, channels))
    w = random_block_weights(rng, 4, channels, length, heads=heads)
    assign_sgu_weights(sgu, w)
    return sgu, w


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [1, 2])
def test_forward_matches_numpy(rng, causal, heads):
    sgu, w = _sgu_with_random_weights(rng, 8, 12, heads=heads, causal=causal)
    z = rng.standard_normal((3, 8, 12))
    mask = np.ones((3, 8), bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    attention_output = rng.standard_normal((3, 8, 6))
    got = sgu(
        z.astype("float32"),
        padding_mask=mask,
        attention_output=attention_output.astype("float32"),
    )
    want = ref.spatial_gating_unit(
        z,
        w["W"],
        w["b"],
        w["sgu_gamma"],
        w["sgu_beta"],
        1e-5,
        mask=mask,
        causal=causal,
        attention_output=attention_output,
    )
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)


def test_shorter_input_uses_leading_block_of_weights(rng):
    sgu, w = _sgu_with_random_weights(rng, 10, 8)
    z = rng.standard_normal((2, 6, 8))
    want = ref.spatial_gating_unit(
        z, w["W"][:, :6, :6], w["b"][:, :6], w["sgu_gamma"], w["sgu_beta"]
    )
    np.testing.assert_allclose(to_numpy(sgu(z.astype("float32"))), want, atol=1e-5)


def test_default_initialisation_passes_first_half_through(rng):
    sgu = SpatialGatingUnit(16)
    z = rng.standard_normal((2, 16, 10)).astype("float32")
    np.testing.assert_allclose(to_numpy(sgu(z)), z[..., :5], atol=1e-4)
    assert np.std(to_numpy(sgu.kernel)) < 1e-5
    np.testing.assert_array_equal(to_numpy(sgu.bias), 1.0)


def test_fit_step_moves_spatial_weights(rng):
    inputs = keras.Input((6, 8))
    outputs = SpatialGatingUnit(6)(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    sgu = model.layers[1]
    kernel_before = to_numpy(sgu.kernel)
    bias_before = to_numpy(sgu.bias)
    x = rng.standard_normal((4, 6, 8)).astype("float32")
    y = rng.standard_normal((4, 6, 4)).astype("float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0)
    assert np.abs(to_numpy(sgu.kernel) - kernel_before).max() > 1e-4
    assert np.abs(to_numpy(sgu.bias) - bias_before).max() > 1e-4


def test_config_round_trip():
    sgu = SpatialGatingUnit(32, causal=True, num_heads=4, epsilon=1e-6, name="sgu")
    clone = SpatialGatingUnit.from_config(sgu.get_config())
    assert clone.get_config() == sgu.get_config()
    assert clone.causal and clone.num_heads == 4 and clone.sequence_length == 32


def test_mixed_bfloat16(rng):
    sgu = SpatialGatingUnit(8, dtype="mixed_bfloat16")
    out = sgu(rng.standard_normal((2, 8, 16)).astype("float32"))
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(v.dtype == "float32" for v in sgu.weights)
    assert np.isfinite(to_numpy(out)).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sequence_length": 0}, "sequence_length"),
        ({"sequence_length": 8, "num_heads": 0}, "num_heads"),
        ({"sequence_length": 8, "epsilon": -1.0}, "epsilon"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SpatialGatingUnit(**kwargs)


def test_bad_inputs(rng):
    with pytest.raises(ValueError, match="must be even"):
        SpatialGatingUnit(8)(np.zeros((1, 8, 7), "float32"))
    with pytest.raises(ValueError, match="num_heads"):
        SpatialGatingUnit(8, num_heads=3)(np.zeros((1, 8, 8), "float32"))
    with pytest.raises(ValueError, match="rank 3"):
        SpatialGatingUnit(8)(np.zeros((8, 8), "float32"))
    sgu = SpatialGatingUnit(8)
    sgu(np.zeros((1, 8, 8), "float32"))
    with pytest.raises(ValueError, match="sequence_length=8"):
        sgu(np.zeros((1, 9, 8), "float32"))
