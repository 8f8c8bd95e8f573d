"""The hidden units of MLP-Mixer's token-mixing MLPs, on the patch grid."""

import math

import numpy as np

from keras_gmlp.layers import MixerBlock
from keras_gmlp.visualization._panels import check_indices
from keras_gmlp.visualization._panels import draw_map
from keras_gmlp.visualization._panels import layers_of_type
from keras_gmlp.visualization._panels import to_numpy
from keras_gmlp.visualization._panels import token_grid


def plot_token_mixing_units(
    model,
    blocks=(0,),
    units=None,
    grid_shape=None,
    shared_scale=False,
    columns=8,
    cmap="RdBu_r",
    panel_size=1.2,
):
    """Draws hidden units of a Mixer's token-mixing MLPs on the patch grid.

    The first dense layer of a token-mixing MLP maps the tokens of each
    channel to `tokens_mlp_dim` hidden units. Unit `k`'s incoming weights,
    one per token, drawn on the patch grid show which image regions that
    unit pools, as the MLP-Mixer paper (Tolstikhin et al., 2021, Figure 5)
    shows them: trained on large data the first blocks' units become local
    and often come in pairs of opposite sign.

    Args:
        model: a Keras model with `MixerBlock` layers, e.g. from
            `keras_gmlp.applications.MixerB16`, or a keras-hub model whose
            `backbone` has them.
        blocks: list of block indices (in model order); each block's units
            start a new figure row. Defaults to the first block.
        units: optional list of hidden-unit indices, drawn for every block.
            Defaults to the first 16 units (or all, if fewer).
        grid_shape: optional `(rows, columns)` of the token grid. Read from
            the model's `PatchEmbedding` when omitted; any input size works.
        shared_scale: bool. `False` (default) gives each unit its own
            symmetric colour scale and colour bar; `True` puts every panel on
            one scale with a single colour bar, so strengths compare.
        columns: int, panels per figure row.
        cmap: matplotlib colour map name.
        panel_size: float, side of each panel in inches.

    Returns:
        A `matplotlib.figure.Figure`; save it with `figure.savefig(path)`.

    Examples:

    ```python
    model = keras_gmlp.applications.MixerB16(weights="imagenet")
    figure = keras_gmlp.visualization.plot_token_mixing_units(
        model, blocks=[0, 1], units=range(8)
    )
    figure.savefig("token_mixing_units.png", dpi=150)
    ```
    """
    from matplotlib.figure import Figure

    mixer_blocks, (rows, grid_columns), blocks, units = _checked_arguments(
        model, blocks, units, grid_shape, columns
    )

    kernels = {
        index: to_numpy(mixer_blocks[index].token_expand_dense.kernel)[:, units]
        for index in blocks
    }
    limit = max(np.abs(kernel).max() for kernel in kernels.values())
    columns = min(columns, len(units))
    rows_per_block = math.ceil(len(units) / columns)
    figure = Figure(
        figsize=(
            panel_size * (1.3 if not shared_scale else 1.05) * columns,
            panel_size * rows_per_block * len(blocks),
        ),
        layout="constrained",
    )
    axes = figure.subplots(rows_per_block * len(blocks), columns, squeeze=False)
    for position, index in enumerate(blocks):
        block_axes = axes[position * rows_per_block : (position + 1) * rows_per_block]
        block_axes = block_axes.reshape(-1)
        for ax, unit, weights in zip(block_axes, units, kernels[index].T):
            weights = weights.reshape(rows, grid_columns)
            image = draw_map(
                figure,
                ax,
                weights,
                limit if shared_scale else np.abs(weights).max(),
                cmap,
                f"block {index}, unit {unit}",
                colorbar=not shared_scale,
            )
        for ax in block_axes[len(units) :]:
            ax.set_axis_off()
    if shared_scale:
        figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6)
    return figure


def _checked_arguments(model, blocks, units, grid_shape, columns):
    """The Mixer blocks, the token grid, and the block and unit indices;
    ValueError on anything that does not fit the model."""
    mixer_blocks = layers_of_type(model, MixerBlock, "plot_token_mixing_units")
    rows, grid_columns = token_grid(getattr(model, "backbone", model), grid_shape)
    blocks = check_indices("blocks", blocks, len(mixer_blocks))
    width = mixer_blocks[0].tokens_mlp_dim
    units = check_indices(
        "units", range(min(16, width)) if units is None else units, width
    )
    if rows * grid_columns != mixer_blocks[0].sequence_length:
        raise ValueError(
            f"The blocks mix {mixer_blocks[0].sequence_length} tokens, not a "
            f"{rows}x{grid_columns} grid. Received: grid_shape={(rows, grid_columns)}"
        )
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(
            f"`columns` must be a positive int. Received: columns={columns!r}"
        )
    return mixer_blocks, (rows, grid_columns), blocks, units
