"""The spatial filters of gMLP and aMLP language models, and how close to
shift-invariant (Toeplitz) they are."""

import numpy as np

from keras_gmlp.layers import gMLPBlock
from keras_gmlp.visualization._panels import check_indices
from keras_gmlp.visualization._panels import layers_of_type
from keras_gmlp.visualization._panels import spread
from keras_gmlp.visualization._panels import to_numpy


def toeplitz_score(kernel, causal=False):
    """The share of a spatial kernel's energy that its diagonal means explain.

    Each diagonal `j - i = d` of `W` is replaced by its mean over the visible
    entries (all of them, or `j <= i` when `causal`); that is the closest
    Toeplitz (shift-invariant) matrix to `W`. The score is that matrix's
    energy over the visible entries divided by `W`'s: 1.0 for an exactly
    Toeplitz `W`; for noise, the number of diagonals over the number of
    visible entries, about `2 / n` either way. The gMLP paper (Liu et al., 2021,
    Figure 7 and section 4) observed learned filters that are local and
    nearly Toeplitz, which motivated its shift-invariant variant.

    Args:
        kernel: array `(n, n)` or `(heads, n, n)`; heads are scored together.
        causal: bool, score only the lower triangle, the part a causal model
            uses.

    Returns:
        A float in `[0, 1]` (1.0 for an all-zero kernel).

    Examples:

    ```python
    n = 8
    shift = np.eye(n, k=-1) + 0.5 * np.eye(n)
    keras_gmlp.visualization.toeplitz_score(shift)  # 1.0
    ```
    """
    kernel = np.asarray(kernel, dtype="float64")
    if kernel.ndim not in (2, 3) or kernel.shape[-1] != kernel.shape[-2]:
        raise ValueError(
            "`kernel` must be square, of shape (n, n) or (heads, n, n). "
            f"Received: kernel.shape={kernel.shape}"
        )
    kernel = kernel.reshape(-1, *kernel.shape[-2:])
    n = kernel.shape[-1]
    offsets = np.subtract.outer(np.arange(n), np.arange(n))  # i - j
    visible = offsets >= 0 if causal else np.ones((n, n), bool)
    energy = np.sum(kernel[:, visible] ** 2)
    if energy == 0:
        return 1.0
    explained = 0.0
    for offset in np.unique(offsets[visible]):
        diagonal = kernel[:, visible & (offsets == offset)]  # (heads, count)
        explained += np.sum(diagonal.mean(axis=1) ** 2) * diagonal.shape[1]
    return float(explained / energy)


def toeplitz_scores(model):
    """`toeplitz_score` of each gMLP block's spatial kernel, in model order,
    with each block's own `causal` setting.

    Args:
        model: a `gMLPBackbone`, a keras-hub task with one as `backbone`, or
            any Keras model with `gMLPBlock` layers.

    Returns:
        A list of floats, one per block.

    Examples:

    ```python
    backbone = keras_gmlp.models.gMLPBackbone(
        vocabulary_size=1000, num_layers=2, hidden_dim=64,
        intermediate_dim=256, max_sequence_length=64,
    )
    keras_gmlp.visualization.toeplitz_scores(backbone)  # two floats
    ```
    """
    blocks = layers_of_type(model, gMLPBlock, "toeplitz_scores")
    return [
        toeplitz_score(to_numpy(block.spatial_gating_unit.kernel), block.causal)
        for block in blocks
    ]


def plot_text_spatial_filters(model, layers=None, tokens=None, head=0, panel_size=2.2):
    """Draws rows of each chosen layer's spatial kernel against token offset.

    Row `i` of a block's `W` holds the weights with which token `i` gathers
    token `j`. Plotted against the offset `j - i`, the rows of a
    shift-invariant (Toeplitz) layer lie on one curve. Each panel is one
    layer, with one line per chosen token and the layer's `toeplitz_score`
    in its title. A causal model's rows stop at offset 0.

    Args:
        model: a `gMLPBackbone`, a keras-hub task with one as `backbone`, or
            any Keras model with `gMLPBlock` layers.
        layers: optional list of block indices. Defaults to up to six layers
            spread over the depth.
        tokens: optional list of token positions. Defaults to the middle
            token of the maximum length.
        head: int, which spatial head to draw.
        panel_size: float, height of each panel in inches.

    Returns:
        A `matplotlib.figure.Figure`.

    Examples:

    ```python
    backbone = keras_gmlp.models.gMLPBackbone(
        vocabulary_size=1000, num_layers=4, hidden_dim=64,
        intermediate_dim=256, max_sequence_length=64,
    )
    figure = keras_gmlp.visualization.plot_text_spatial_filters(
        backbone, tokens=[16, 32, 48]
    )
    figure.savefig("spatial_filters.png")
    ```
    """
    from matplotlib.figure import Figure

    blocks = layers_of_type(model, gMLPBlock, "plot_text_spatial_filters")
    layers = check_indices(
        "layers", spread(len(blocks), 6) if layers is None else layers, len(blocks)
    )
    n = blocks[0].sequence_length
    tokens = check_indices("tokens", [n // 2] if tokens is None else tokens, n)
    num_heads = blocks[0].spatial_gating_unit.num_heads
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < num_heads:
        raise ValueError(f"`head` must be in [0, {num_heads}). Received: head={head}")
    figure = Figure(
        figsize=(panel_size * 2.2, panel_size * len(layers)), layout="constrained"
    )
    axes = figure.subplots(len(layers), 1, squeeze=False)[:, 0]
    for ax, index in zip(axes, layers):
        block = blocks[index]
        kernel = to_numpy(block.spatial_gating_unit.kernel)
        for token in tokens:
            stop = token + 1 if block.causal else n
            ax.plot(
                np.arange(stop) - token,
                kernel[head, token, :stop],
                label=f"token {token}",
            )
        ax.axhline(0.0, color="0.7", linewidth=0.5)
        ax.set_title(
            f"layer {index}: Toeplitz score {toeplitz_score(kernel, block.causal):.2f}",
            fontsize=8,
        )
        ax.set_ylabel("W[i, j]", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[-1].set_xlabel("offset j - i (tokens)", fontsize=7)
    axes[0].legend(fontsize=6)
    return figure
