import numpy as np
import pytest

from keras_gmlp.layers import PatchEmbedding
from tests import numpy_reference as ref
from tests.layers.helpers import to_numpy


def test_row_major_tokens_match_numpy(rng):
    layer = PatchEmbedding(patch_size=4, hidden_dim=5)
    images = rng.standard_normal((2, 8, 12, 3))
    layer.build(images.shape)
    kernel = rng.standard_normal((4, 4, 3, 5))
    bias = rng.standard_normal(5)
    layer.projection.kernel.assign(kernel)
    layer.projection.bias.assign(bias)
    got = layer(images.astype("float32"))
    assert tuple(got.shape) == (2, 6, 5)
    want = ref.patch_embedding(images, kernel, bias, 4)
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-4, rtol=1e-5)


def test_output_shape_and_grid():
    layer = PatchEmbedding(16, 32)
    assert layer.compute_output_shape((None, 224, 160, 3)) == (None, 140, 32)
    assert layer.grid_shape((None, 224, 160, 3)) == (14, 10)


def test_patch_must_divide_image():
    with pytest.raises(ValueError, match="multiples of patch_size=16"):
        PatchEmbedding(16, 32)(np.zeros((1, 224, 200, 3), "float32"))
    with pytest.raises(ValueError, match="rank 4"):
        PatchEmbedding(16, 32)(np.zeros((1, 224, 3), "float32"))
    with pytest.raises(ValueError, match="patch_size"):
        PatchEmbedding(0, 32)


def test_config_round_trip():
    layer = PatchEmbedding(16, 32)
    assert (
        PatchEmbedding.from_config(layer.get_config()).get_config()
        == layer.get_config()
    )
