"""The patch-MLP image architecture, shared by the image backbones
(`gMLPImageBackbone`, `MLPMixerBackbone`) and the keras.applications
builders (`keras_gmlp.applications.gMLPS`, `MixerB16`, ...).

It imports only keras, so the builders stay light (no keras-hub, no
TensorFlow under jax or torch) while building exactly the layers, names and
order the backbones build. The layer names (`stem`, `blocks_{i}`, `norm`)
are the ones the timm conversion relies on.
"""

import keras
import numpy as np

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import gMLPBlock


def gmlp_block_factory(hidden_dim, intermediate_dim):
    """`make_block(index, sequence_length, drop_path_rate, dtype)` for gMLP
    (timm's `SpatialGatingBlock` with `GatedMlp`)."""

    def make_block(index, sequence_length, drop_path_rate, dtype=None):
        return gMLPBlock(
            hidden_dim,
            intermediate_dim,
            sequence_length,
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


def patch_mlp(images, make_block, num_blocks, hidden_dim, patch_size,
              drop_path_rate=0.0, dtype=None):
    """Runs channels-last `images` through stem, blocks and final norm.

    Args:
        images: symbolic Keras tensor `(batch, height, width, channels)`
            with known height and width, multiples of `patch_size`.
        make_block: a `*_block_factory` result.
        num_blocks: int, the number of blocks.
        hidden_dim: int, the token width.
        patch_size: int, the side of the square patches.
        drop_path_rate: float, the last block's stochastic depth rate; the
            rates increase linearly from 0, as in timm.
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
    rates = np.linspace(0.0, drop_path_rate, num_blocks)
    blocks, block_outputs = [], []
    for index in range(num_blocks):
        block = make_block(index, grid[0] * grid[1], float(rates[index]), dtype)
        x = block(x)
        blocks.append(block)
        block_outputs.append(x)
    norm = keras.layers.LayerNormalization(
        epsilon=1e-6, dtype=dtype, name="norm"
    )
    return {
        "grid": grid,
        "block_outputs": block_outputs,
        "tokens": norm(x),
        "stem": stem,
        "blocks": blocks,
        "norm": norm,
    }
