"""The spatial projections of gMLP image models, on the patch grid."""

import numpy as np

from keras_gmlp.layers import gMLPBlock
from keras_gmlp.visualization._panels import check_indices
from keras_gmlp.visualization._panels import draw_map
from keras_gmlp.visualization._panels import layers_of_type
from keras_gmlp.visualization._panels import spread
from keras_gmlp.visualization._panels import to_numpy
from keras_gmlp.visualization._panels import token_grid


def plot_spatial_weights(
    model,
    blocks=None,
    tokens=None,
    grid_shape=None,
    head=0,
    cmap="RdBu_r",
    panel_size=1.6,
):
    """Draws the learned spatial projections of a gMLP image model.

    Row `m` of a spatial gating unit's `W` holds the weights with which
    token `m` gathers every token of the image. Drawn on the patch grid it
    shows the "filter" that token learned; the paper (Liu et al., 2021,
    Figure 3) finds them local and shift-invariant, like convolutions,
    without that prior being built in. Each panel is one token's row in one
    block, with a symmetric colour scale (blue negative, red positive) and
    the token itself marked with a cross, and its own colour bar.

    Args:
        model: a Keras model containing `gMLPBlock` layers, e.g. from
            `keras_gmlp.applications.gMLPS`.
        blocks: optional list of block indices (in model order), one figure
            row each. Defaults to up to six blocks spread over the depth.
        tokens: optional list of token indices, or `(row, column)` pairs,
            one figure column each. Defaults to the centre token and four
            tokens half-way to the corners.
        grid_shape: optional `(rows, columns)` of the token grid. Read from
            the model's `PatchEmbedding` when omitted.
        head: int, which SGU head to draw for multi-head units.
        cmap: matplotlib colour map name.
        panel_size: float, side of each panel in inches.

    Returns:
        A `matplotlib.figure.Figure`; save it with `figure.savefig(path)`.

    Examples:

    ```python
    model = keras_gmlp.applications.gMLPS(weights="gmlp_s16_224.safetensors")
    figure = keras_gmlp.visualization.plot_spatial_weights(
        model, blocks=[0, 10, 20, 29]
    )
    figure.savefig("spatial_weights.png", dpi=150)
    ```
    """
    # Imported here so the library does not need matplotlib to be installed.
    from matplotlib.figure import Figure

    gmlp_blocks = layers_of_type(model, gMLPBlock, "plot_spatial_weights")
    rows, columns = _checked_grid(model, grid_shape, gmlp_blocks[0].sequence_length)
    blocks = check_indices(
        "blocks",
        spread(len(gmlp_blocks), 6) if blocks is None else blocks,
        len(gmlp_blocks),
    )
    positions = _token_positions(tokens, rows, columns)
    num_heads = gmlp_blocks[0].spatial_gating_unit.num_heads
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < num_heads:
        raise ValueError(f"`head` must be in [0, {num_heads}). Received: head={head}")

    figure = Figure(
        figsize=(panel_size * 1.25 * len(positions), panel_size * len(blocks)),
        layout="constrained",
    )
    axes = figure.subplots(len(blocks), len(positions), squeeze=False)
    num_tokens = rows * columns
    for row_axes, index in zip(axes, blocks):
        kernel = to_numpy(gmlp_blocks[index].spatial_gating_unit.kernel)
        kernel = kernel[head, :num_tokens, :num_tokens]
        for ax, (row, column) in zip(row_axes, positions):
            weights = kernel[row * columns + column].reshape(rows, columns)
            draw_map(
                figure,
                ax,
                weights,
                np.abs(weights).max(),
                cmap,
                f"block {index}\ntoken ({row}, {column})",
            )
            ax.plot(column, row, marker="x", color="black", markersize=4)
    return figure


def _checked_grid(model, grid_shape, sequence_length):
    rows, columns = token_grid(model, grid_shape)
    if rows * columns > sequence_length:
        raise ValueError(
            f"The blocks mix {sequence_length} tokens, fewer than a "
            f"{rows}x{columns} grid. Received: grid_shape={(rows, columns)}"
        )
    return rows, columns


def _token_positions(tokens, rows, columns):
    """`(row, column)` of each token index or pair; defaults to the centre
    and four tokens half-way to the corners."""
    if tokens is None:
        return [
            (rows // 2, columns // 2),
            (rows // 4, columns // 4),
            (rows // 4, (3 * columns) // 4),
            ((3 * rows) // 4, columns // 4),
            ((3 * rows) // 4, (3 * columns) // 4),
        ]
    positions = []
    for token in tokens:
        if isinstance(token, (tuple, list)):
            row, column = token
        else:
            row, column = divmod(int(token), columns)
        if not (0 <= row < rows and 0 <= column < columns):
            raise ValueError(
                f"Tokens must lie on the {rows}x{columns} grid. "
                f"Received: tokens={list(tokens)}"
            )
        positions.append((int(row), int(column)))
    return positions
