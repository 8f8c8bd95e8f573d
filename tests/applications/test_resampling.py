"""Weights used at another resolution than the checkpoint's."""

import keras
import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from keras_gmlp.applications import load_timm_weights
from keras_gmlp.applications import timm_state_dict
from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.utils.timm.resampling import infer_grid
from keras_gmlp.utils.timm.resampling import resample_token_axis
from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path


def torch_resize(array, source_grid, target_grid, axis):
    """Reference: torch's bilinear resize (half-pixel centres) of one token axis."""
    moved = np.moveaxis(array, axis, -1)
    grids = torch.from_numpy(
        moved.reshape((-1, 1) + tuple(source_grid)).astype("float64")
    )
    resized = torch.nn.functional.interpolate(
        grids, size=tuple(target_grid), mode="bilinear", align_corners=False
    ).numpy()
    resized = resized.reshape(moved.shape[:-1] + (target_grid[0] * target_grid[1],))
    return np.moveaxis(resized, -1, axis)


@pytest.mark.parametrize(
    "source_grid, target_grid", [((4, 6), (6, 9)), ((4, 6), (8, 8)), ((6, 6), (4, 3))]
)
def test_resampling_matches_torch_bilinear_resize(rng, source_grid, target_grid):
    n = source_grid[0] * source_grid[1]
    kernel = rng.standard_normal((n, n, 2))
    for axis in (0, 1):
        np.testing.assert_allclose(
            resample_token_axis(kernel, axis, source_grid, target_grid),
            torch_resize(kernel, source_grid, target_grid, axis),
            atol=1e-5,
        )


def test_summed_axis_keeps_the_sum_over_an_upsampled_image(rng):
    # A smooth kernel row applied to a smooth image gives about the same sum
    # on a 4x4 grid and on the 8x8 grid of the same image.
    coarse = np.linspace(0, 1, 4)
    row = np.add.outer(coarse, coarse).reshape(1, 16)
    image = np.multiply.outer(1 + coarse, 2 - coarse).reshape(16)
    fine_row = resample_token_axis(row, 1, (4, 4), (8, 8), summed=True)
    fine_image = torch_resize(image[None], (4, 4), (8, 8), 1)[0]
    np.testing.assert_allclose(fine_row @ fine_image, row @ image, rtol=0.02)
    np.testing.assert_allclose(
        resample_token_axis(row, 1, (4, 4), (4, 4), summed=True), row, atol=1e-6
    )


def test_checkpoint_grid_inference():
    assert infer_grid(196, (16, 16)) == (14, 14)
    assert infer_grid(24, (8, 12)) == (4, 6)
    with pytest.raises(ValueError, match="checkpoint_grid"):
        infer_grid(24, (3, 4))


def test_gmlp_spatial_weights_are_resampled_on_load(tmp_path):
    state = load_file(fixture_path("gmlp", ".safetensors"))
    # 4x6 grid in the checkpoint, 8x12 in the model (same aspect ratio).
    model = build_tiny(
        "gmlp", input_shape=(64, 96, 3), weights=fixture_path("gmlp", ".safetensors")
    )
    sgu = model.get_layer("blocks_1").spatial_gating_unit
    weight = state["blocks.1.mlp_channels.gate.proj.weight"]
    expected = torch_resize(weight, (4, 6), (8, 12), 0)
    expected = torch_resize(expected, (4, 6), (8, 12), 1) * (24 / 96)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(sgu.kernel)[0], expected, atol=1e-5
    )
    bias = torch_resize(
        state["blocks.1.mlp_channels.gate.proj.bias"], (4, 6), (8, 12), 0
    )
    np.testing.assert_allclose(keras.ops.convert_to_numpy(sgu.bias)[0], bias, atol=1e-5)
    # Channel weights are untouched.
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.get_layer("blocks_1").expand_dense.kernel),
        state["blocks.1.mlp_channels.fc1.weight"].T,
    )


def test_mixer_token_mlp_is_resampled_on_load():
    state = load_file(fixture_path("mixer", ".safetensors"))
    model = build_tiny(
        "mixer", input_shape=(64, 96, 3), weights=fixture_path("mixer", ".safetensors")
    )
    block = model.get_layer("blocks_0")
    fc1 = torch_resize(state["blocks.0.mlp_tokens.fc1.weight"], (4, 6), (8, 12), 1)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(block.token_expand_dense.kernel),
        fc1.T * (24 / 96),
        atol=1e-5,
    )
    fc2 = torch_resize(state["blocks.0.mlp_tokens.fc2.weight"], (4, 6), (8, 12), 0)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(block.token_output_dense.kernel), fc2.T, atol=1e-5
    )


def test_an_ambiguous_grid_needs_checkpoint_grid(family):
    # 24 tokens cannot be told apart as 4x6 or 6x4 for a 6x8 model.
    path = fixture_path(family, ".safetensors")
    with pytest.raises(ValueError, match="Pass `checkpoint_grid"):
        build_tiny(family, input_shape=(48, 64, 3), weights=path)
    model = build_tiny(family, input_shape=(48, 64, 3))
    load_timm_weights(model, path, checkpoint_grid=(4, 6))
    with pytest.raises(ValueError, match=r"Received: checkpoint_grid=\(5, 5\)"):
        load_timm_weights(model, path, checkpoint_grid=(5, 5))


@pytest.mark.slow
def test_trained_model_keeps_its_predictions_at_another_resolution():
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images[..., None].astype("float32") * (255.0 / 16.0)
    labels = digits.target
    order = np.random.default_rng(0).permutation(len(labels))
    train, test = order[:1400], order[1400:]

    def upsampled(size):
        return (
            torch_resize(
                images[..., 0].reshape(len(images), 64), (8, 8), (size, size), 1
            )
            .reshape(len(images), size, size, 1)
            .astype("float32")
        )

    def build(size):
        return gMLP(
            num_blocks=2,
            hidden_dim=32,
            intermediate_dim=64,
            patch_size=2,
            input_shape=(size, size, 1),
            classes=10,
            classifier_activation=None,
        )

    model = build(16)
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(upsampled(16)[train], labels[train], epochs=6, batch_size=64, verbose=0)
    native = model.predict(upsampled(16)[test], verbose=0).argmax(-1)
    assert (native == labels[test]).mean() > 0.9

    # The same digits on a 12x12 instead of an 8x8 token grid.
    larger = build(24)
    load_timm_weights(larger, timm_state_dict(model))
    resampled = larger.predict(upsampled(24)[test], verbose=0).argmax(-1)
    assert (resampled == native).mean() > 0.85
    assert (resampled == labels[test]).mean() > 0.85
