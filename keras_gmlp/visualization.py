"""Pictures of what gMLP models learn."""

import keras
import numpy as np

from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import gMLPBlock


def _spread(count, limit):
    """`limit` evenly spaced indices of `range(count)`, first and last included."""
    if count <= limit:
        return list(range(count))
    return sorted({int(round(i)) for i in np.linspace(0, count - 1, limit)})


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
    the token itself marked with a cross.

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

    gmlp_blocks = [layer for layer in model.layers if isinstance(layer, gMLPBlock)]
    if not gmlp_blocks:
        raise ValueError(
            "plot_spatial_weights needs a model with gMLPBlock layers. "
            f"Received: model={model.name!r}"
        )
    if grid_shape is None:
        stems = [layer for layer in model.layers if isinstance(layer, PatchEmbedding)]
        if not stems:
            raise ValueError(
                "The model has no PatchEmbedding to read the token grid from; "
                "pass `grid_shape=(rows, columns)`. Received: grid_shape=None"
            )
        grid_shape = stems[0].grid_shape(stems[0].input.shape)
    rows, columns = (int(size) for size in grid_shape)
    num_tokens = rows * columns
    sequence_length = gmlp_blocks[0].sequence_length
    if num_tokens > sequence_length:
        raise ValueError(
            f"The blocks mix {sequence_length} tokens, fewer than a "
            f"{rows}x{columns} grid. Received: grid_shape={tuple(grid_shape)}"
        )

    if blocks is None:
        blocks = _spread(len(gmlp_blocks), 6)
    for index in blocks:
        if not 0 <= index < len(gmlp_blocks):
            raise ValueError(
                f"Block indices must be in [0, {len(gmlp_blocks)}). "
                f"Received: blocks={list(blocks)}"
            )
    if tokens is None:
        tokens = [
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
    num_heads = gmlp_blocks[0].spatial_gating_unit.num_heads
    if not 0 <= head < num_heads:
        raise ValueError(
            f"`head` must be in [0, {num_heads}). Received: head={head}"
        )

    figure = Figure(
        figsize=(panel_size * len(positions), panel_size * len(blocks)),
        layout="constrained",
    )
    axes = figure.subplots(len(blocks), len(positions), squeeze=False)
    for row_axes, index in zip(axes, blocks):
        kernel = np.asarray(
            keras.ops.convert_to_numpy(
                gmlp_blocks[index].spatial_gating_unit.kernel
            )
        )[head, :num_tokens, :num_tokens]
        for ax, (row, column) in zip(row_axes, positions):
            weights = kernel[row * columns + column].reshape(rows, columns)
            limit = float(np.abs(weights).max()) or 1.0
            ax.imshow(weights, cmap=cmap, vmin=-limit, vmax=limit)
            ax.plot(column, row, marker="x", color="black", markersize=4)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"block {index}, token ({row}, {column})", fontsize=6)
    return figure
