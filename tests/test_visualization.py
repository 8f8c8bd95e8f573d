import keras
import numpy as np
import pytest

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.visualization import plot_spatial_weights


def tiny_gmlp():
    return gMLP(
        num_blocks=3,
        hidden_dim=8,
        intermediate_dim=16,
        patch_size=4,
        input_shape=(12, 16, 3),
        classes=2,
    )


def test_each_panel_is_a_token_row_of_w_on_the_grid(rng, tmp_path):
    model = tiny_gmlp()  # a 3x4 grid of 12 tokens
    kernels = rng.standard_normal((3, 1, 12, 12)).astype("float32")
    for index in range(3):
        model.get_layer(f"blocks_{index}").spatial_gating_unit.kernel.assign(
            kernels[index]
        )
    figure = plot_spatial_weights(model, blocks=[0, 2], tokens=[5, (2, 3)])
    axes = [ax for ax in figure.axes if ax.images]
    assert len(axes) == 4
    expected = [
        kernels[0, 0, 5],
        kernels[0, 0, 11],
        kernels[2, 0, 5],
        kernels[2, 0, 11],
    ]
    for ax, row in zip(axes, expected):
        np.testing.assert_array_equal(ax.images[0].get_array(), row.reshape(3, 4))
        # A symmetric colour scale, so zero is always white.
        assert ax.images[0].get_clim() == (-np.abs(row).max(), np.abs(row).max())
    path = tmp_path / "spatial.png"
    figure.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_defaults_spread_blocks_and_tokens():
    figure = plot_spatial_weights(tiny_gmlp())
    assert len([ax for ax in figure.axes if ax.images]) == 3 * 5


def test_bad_arguments_raise():
    model = tiny_gmlp()
    with pytest.raises(ValueError, match=r"Received: blocks=\[3\]"):
        plot_spatial_weights(model, blocks=[3])
    with pytest.raises(ValueError, match=r"Received: tokens=\[12\]"):
        plot_spatial_weights(model, tokens=[12])
    with pytest.raises(ValueError, match="Received: head=1"):
        plot_spatial_weights(model, head=1)
    mixer = MLPMixer(
        num_blocks=1,
        hidden_dim=8,
        tokens_mlp_dim=4,
        channels_mlp_dim=8,
        patch_size=4,
        input_shape=(8, 8, 3),
    )
    with pytest.raises(ValueError, match="gMLPBlock"):
        plot_spatial_weights(mixer)
    headless = keras.Sequential([keras.Input((12, 8)), model.get_layer("blocks_0")])
    with pytest.raises(ValueError, match="grid_shape"):
        plot_spatial_weights(headless)
    figure = plot_spatial_weights(headless, grid_shape=(3, 4), tokens=[0])
    assert len([ax for ax in figure.axes if ax.images]) == 1
