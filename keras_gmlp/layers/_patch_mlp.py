"""The patch-MLP image architecture, shared by the image backbones
(`gMLPImageBackbone`, `MLPMixerBackbone`) and the keras.applications
builders (`keras_gmlp.applications.gMLPS`, `MixerB16`, ...).

It imports only keras and lives beside the layers, not in
`keras_gmlp.models` (whose package imports keras-hub), so the builders stay
light (no keras-hub, no TensorFlow under jax or torch) while building exactly the layers, names and
order the backbones build. The layer names (`stem`, `blocks_{i}`, `norm`)
are the ones the timm conversion relies on.
"""

import keras
import numpy as np

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import gMLPBlock
from keras_gmlp.layers._validation import is_rate


def check_image_shape(image_shape, patch_size, data_format):
    """`image_shape` (in `data_format` order) as a channels-last tuple of
    three positive ints, height and width multiples of `patch_size`; raises
    ValueError otherwise."""
    shape = tuple(image_shape) if isinstance(image_shape, (tuple, list)) else None
    if (
        shape is None
        or len(shape) != 3
        or not all(
            isinstance(size, int) and not isinstance(size, bool) and size > 0
            for size in shape
        )
    ):
        raise ValueError(
            "`image_shape` must be three positive integers (height, width, "
            "channels); the token-mixing weights cover a fixed patch grid, "
            f"so height and width must be known. Received: image_shape={image_shape!r}"
        )
    if data_format == "channels_first":
        shape = (shape[1], shape[2], shape[0])
    if shape[0] % patch_size or shape[1] % patch_size:
        raise ValueError(
            "The image height and width must be multiples of "
            f"patch_size={patch_size}. Received: image_shape={image_shape!r}"
        )
    return shape


def check_data_format(data_format):
    data_format = data_format or keras.config.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            "`data_format` must be 'channels_last' or 'channels_first'. "
            f"Received: data_format={data_format!r}"
        )
    return data_format


def gmlp_block_factory(hidden_dim, intermediate_dim, gating="split"):
    """`make_block(index, sequence_length, drop_path_rate, dtype)` for gMLP
    (timm's `SpatialGatingBlock` with `GatedMlp` for the split gating)."""

    def make_block(index, sequence_length, drop_path_rate, dtype=None):
        return gMLPBlock(
            hidden_dim,
            intermediate_dim,
            sequence_length,
            gating=gating,
            drop_path_rate=drop_path_rate,
            dtype=dtype,
            name=f"blocks_{index}",
        )

    return make_block


def mixer_block_factory(hidden_dim, tokens_mlp_dim, channels_mlp_dim):
    """`make_block(index, sequence_length, drop_path_rate, dtype)` for
    MLP-Mixer (timm's `MixerBlock`)."""

    def make_block(index, sequence_length, drop_path_rate, dtype=None):
        return MixerBlock(
            hidden_dim,
            tokens_mlp_dim,
            channels_mlp_dim,
            sequence_length,
            drop_path_rate=drop_path_rate,
            dtype=dtype,
            name=f"blocks_{index}",
        )

    return make_block


def block_drop_path_rates(drop_path_rate, num_blocks):
    """Each block's stochastic depth rate, checked. A float is the last
    block's rate of a linear schedule from 0, the recipe of DeiT and of the
    paper; a list or tuple gives one rate per block. (timm's `MlpMixer`
    gives every block the same `drop_path_rate`: its conversion passes
    `[rate] * num_blocks`.)"""
    if isinstance(drop_path_rate, (list, tuple)):
        rates = list(drop_path_rate)
        valid = len(rates) == num_blocks and all(map(is_rate, rates))
    else:
        valid = is_rate(drop_path_rate)
        rates = np.linspace(0.0, drop_path_rate, num_blocks) if valid else []
    if not valid:
        raise ValueError(
            "Argument `drop_path_rate` must be a float in [0, 1) (the last "
            f"block's rate) or a list of {num_blocks} such rates, one per "
            f"block. Received: drop_path_rate={drop_path_rate!r}"
        )
    return [float(rate) for rate in rates]


def patch_mlp(
    images,
    make_block,
    num_blocks,
    hidden_dim,
    patch_size,
    drop_path_rate=0.0,
    dtype=None,
):
    """Runs channels-last `images` through stem, blocks and final norm.

    Args:
        images: symbolic Keras tensor `(batch, height, width, channels)`
            with known height and width, multiples of `patch_size`.
        make_block: a `*_block_factory` result.
        num_blocks: int, the number of blocks.
        hidden_dim: int, the token width.
        patch_size: int, the side of the square patches.
        drop_path_rate: float, the last block's stochastic depth rate of
            a linear schedule from 0; or a list of one rate per block (see
            `block_drop_path_rates`).
        dtype: dtype policy of the layers.

    Returns:
        A dict with `"grid"` (rows, columns), `"block_outputs"` (the token
        sequence after each block, `(batch, tokens, hidden_dim)`),
        `"tokens"` (the normalised output tokens) and the layers `"stem"`,
        `"blocks"` and `"norm"`.
    """
    stem = PatchEmbedding(patch_size, hidden_dim, dtype=dtype, name="stem")
    grid = stem.grid_shape(images.shape)
    x = stem(images)
    rates = block_drop_path_rates(drop_path_rate, num_blocks)
    blocks, block_outputs = [], []
    for index in range(num_blocks):
        block = make_block(index, grid[0] * grid[1], rates[index], dtype)
        x = block(x)
        blocks.append(block)
        block_outputs.append(x)
    norm = keras.layers.LayerNormalization(epsilon=1e-6, dtype=dtype, name="norm")
    return {
        "grid": grid,
        "block_outputs": block_outputs,
        "tokens": norm(x),
        "stem": stem,
        "blocks": blocks,
        "norm": norm,
    }
