"""The Mixer token-mixing pictures, the text models' spatial filters and
the Toeplitz score, against numpy."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import gMLPBlock
from keras_gmlp.visualization import plot_text_spatial_filters
from keras_gmlp.visualization import plot_token_mixing_units
from keras_gmlp.visualization import toeplitz_score
from keras_gmlp.visualization import toeplitz_scores


def least_squares_toeplitz_score(kernel, causal):
    """The energy share of W's least-squares projection onto the Toeplitz
    matrices (one free value per visible diagonal), over the visible part."""
    n = kernel.shape[-1]
    rows, columns = np.nonzero(np.tril(np.ones((n, n))) if causal else np.ones((n, n)))
    offsets = sorted(set(rows - columns))
    basis = np.stack([(rows - columns) == d for d in offsets], axis=1).astype(float)
    total = explained = 0.0
    for head in kernel.reshape(-1, n, n):
        values = head[rows, columns]
        fit = basis @ np.linalg.lstsq(basis, values, rcond=None)[0]
        total += values @ values
        explained += fit @ fit
    return explained / total


def test_toeplitz_score_of_hand_made_kernels():
    assert toeplitz_score(np.array([[1.0, 0.0], [0.0, 3.0]])) == pytest.approx(0.8)
    # Causal: (0,0)=1, (1,1)=3 share a diagonal (mean 2); (1,0)=2 alone; 5 unseen.
    causal = np.array([[1.0, 5.0], [2.0, 3.0]])
    assert toeplitz_score(causal, causal=True) == pytest.approx(12 / 14)
    assert toeplitz_score(np.zeros((3, 3))) == 1.0


@pytest.mark.parametrize("causal", [False, True])
def test_toeplitz_score_is_one_for_toeplitz_and_matches_least_squares(rng, causal):
    n = 9
    diagonals = rng.standard_normal(2 * n - 1)
    toeplitz = diagonals[np.subtract.outer(np.arange(n), np.arange(n)) + n - 1]
    assert toeplitz_score(toeplitz, causal) == pytest.approx(1.0)
    kernel = rng.standard_normal((2, n, n))
    np.testing.assert_allclose(
        toeplitz_score(kernel, causal), least_squares_toeplitz_score(kernel, causal)
    )
    with pytest.raises(ValueError, match=r"kernel.shape=\(3, 4\)"):
        toeplitz_score(np.zeros((3, 4)))


@pytest.mark.parametrize("causal", [False, True])
def test_noise_scores_the_share_of_diagonals_among_entries(rng, causal):
    # Each diagonal mean keeps 1/length of its diagonal's noise energy, so
    # noise scores (number of diagonals) / (number of entries), about 2 / n:
    # the level that a freshly built model starts from.
    n = 64
    diagonals, entries = (n, n * (n + 1) / 2) if causal else (2 * n - 1, n * n)
    scores = [toeplitz_score(rng.standard_normal((n, n)), causal) for _ in range(200)]
    assert np.mean(scores) == pytest.approx(diagonals / entries, rel=0.05)


def text_model(rng, causal_first=True):
    """Two gMLP blocks of length 10, the first causal, kernels randomised."""
    model = keras.Sequential(
        [
            keras.Input((10, 8)),
            gMLPBlock(8, 16, 10, causal=causal_first),
            gMLPBlock(8, 16, 10),
        ]
    )
    kernels = rng.standard_normal((2, 1, 10, 10)).astype("float32")
    for block, kernel in zip(model.layers, kernels):
        block.spatial_gating_unit.kernel.assign(kernel)
    return model, kernels


def test_toeplitz_scores_read_each_block_with_its_causal_flag(rng):
    model, kernels = text_model(rng)
    np.testing.assert_allclose(
        toeplitz_scores(model),
        [
            least_squares_toeplitz_score(kernels[0], True),
            least_squares_toeplitz_score(kernels[1], False),
        ],
        rtol=1e-6,
    )


def test_text_filters_plot_rows_against_offset(rng):
    model, kernels = text_model(rng)
    figure = plot_text_spatial_filters(model, layers=[0, 1], tokens=[3, 7])
    causal_ax, full_ax = figure.axes
    lines = [line for line in causal_ax.lines if line.get_label().startswith("token")]
    np.testing.assert_array_equal(lines[1].get_xdata(), np.arange(8) - 7)  # stops at 0
    np.testing.assert_allclose(lines[1].get_ydata(), kernels[0, 0, 7, :8])
    lines = [line for line in full_ax.lines if line.get_label().startswith("token")]
    np.testing.assert_allclose(lines[0].get_ydata(), kernels[1, 0, 3])
    assert (
        f"{least_squares_toeplitz_score(kernels[1], False):.2f}" in full_ax.get_title()
    )
    with pytest.raises(ValueError, match=r"Received: tokens=\[10\]"):
        plot_text_spatial_filters(model, tokens=[10])
    with pytest.raises(ValueError, match=r"Received: layers=\[2\]"):
        plot_text_spatial_filters(model, layers=[2])


def mixer(rng, image_shape=(8, 12, 3), blocks=2):
    """Patch 4: a 2x3 grid of 6 tokens; every weight randomised."""
    inputs = keras.Input(image_shape)
    x = PatchEmbedding(patch_size=4, hidden_dim=8)(inputs)
    for index in range(blocks):
        x = MixerBlock(8, 5, 16, 6, name=f"blocks_{index}")(x)
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.LayerNormalization()(x))
    model = keras.Model(inputs, keras.layers.Dense(3)(x))
    for variable in model.weights:
        variable.assign(rng.standard_normal(variable.shape))
    return model


def image_axes(figure):
    return [ax for ax in figure.axes if ax.images]


def test_token_mixing_units_are_first_dense_columns_on_the_grid(rng):
    model = mixer(rng)
    kernel = keras.ops.convert_to_numpy(
        model.get_layer("blocks_1").token_expand_dense.kernel
    )
    figure = plot_token_mixing_units(model, blocks=[1], units=[0, 4], columns=2)
    axes = image_axes(figure)
    assert len(axes) == 2
    for ax, unit in zip(axes, [0, 4]):
        expected = kernel[:, unit].reshape(2, 3)
        np.testing.assert_allclose(ax.images[0].get_array(), expected)
        assert ax.images[0].get_clim() == pytest.approx(
            (-abs(expected).max(), abs(expected).max())
        )
    assert len(figure.axes) == 4  # a colour bar per unit


def test_token_mixing_units_shared_scale_and_defaults(rng):
    model = mixer(rng)
    figure = plot_token_mixing_units(model, blocks=[0, 1], shared_scale=True, columns=4)
    axes = image_axes(figure)
    assert len(axes) == 2 * 5  # tokens_mlp_dim 5 < 16: every unit of both blocks
    limits = {ax.images[0].get_clim() for ax in axes}
    assert len(limits) == 1
    assert len(figure.axes) == 2 * 2 * 4 + 1  # 2 blocks x 2 rows x 4 columns, one bar


def test_token_mixing_units_refuse_bad_arguments(rng):
    model = mixer(rng)
    with pytest.raises(ValueError, match=r"Received: units=\[5\]"):
        plot_token_mixing_units(model, units=[5])
    with pytest.raises(ValueError, match=r"Received: blocks=\[2\]"):
        plot_token_mixing_units(model, blocks=[2])
    with pytest.raises(ValueError, match="Received: grid_shape"):
        plot_token_mixing_units(model, grid_shape=(3, 3))
    gmlp = keras.Sequential([keras.Input((6, 8)), gMLPBlock(8, 16, 6)])
    with pytest.raises(ValueError, match="MixerBlock"):
        plot_token_mixing_units(gmlp)
