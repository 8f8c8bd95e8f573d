"""Building blocks of gMLP, aMLP and MLP-Mixer. Imports only keras."""

from keras_gmlp.layers.gmlp_block import gMLPBlock
from keras_gmlp.layers.mixer_block import MixerBlock
from keras_gmlp.layers.patch_embedding import PatchEmbedding
from keras_gmlp.layers.spatial_gating_unit import SpatialGatingUnit
from keras_gmlp.layers.stochastic_depth import StochasticDepth
from keras_gmlp.layers.tiny_attention import TinyAttention

__all__ = [
    "gMLPBlock",
    "MixerBlock",
    "PatchEmbedding",
    "SpatialGatingUnit",
    "StochasticDepth",
    "TinyAttention",
]
