import numpy as np
import pytest

from keras_gmlp.layers import StochasticDepth
from tests.layers.helpers import to_numpy


def test_identity_at_inference(rng):
    x = rng.standard_normal((4, 3, 2)).astype("float32")
    np.testing.assert_array_equal(to_numpy(StochasticDepth(0.5)(x)), x)


# Unseeded, PyTorch draws with its own dropout; seeded, with a generator.
@pytest.mark.parametrize("seed", [None, 1])
def test_drops_whole_samples_and_rescales(seed):
    x = np.ones((2000, 5, 3), "float32")
    out = to_numpy(StochasticDepth(0.25, seed=seed)(x, training=True))
    per_sample = out.reshape(2000, -1)
    # Each sample is either all zero or all 1 / (1 - rate).
    assert set(np.unique(per_sample)) <= {0.0, np.float32(1 / 0.75)}
    assert (per_sample.min(1) == per_sample.max(1)).all()
    kept = (per_sample[:, 0] > 0).mean()
    assert abs(kept - 0.75) < 0.05


def test_seeded_layers_repeat():
    x = np.ones((64, 2), "float32")
    first = to_numpy(StochasticDepth(0.5, seed=3)(x, training=True))
    second = to_numpy(StochasticDepth(0.5, seed=3)(x, training=True))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("rate", [-0.1, 1.0, "0.1", True])
def test_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        StochasticDepth(rate)


def test_config_round_trip():
    layer = StochasticDepth(0.2, seed=7)
    assert (
        StochasticDepth.from_config(layer.get_config()).get_config()
        == layer.get_config()
    )
