"""Bad calls raise a ValueError naming the argument, the same on every
backend, instead of an error from inside a backend."""

import numpy as np
import pytest

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import TinyAttention
from keras_gmlp.layers import gMLPBlock


def built(layer, shape):
    layer(np.zeros(shape, "float32"))
    return layer


@pytest.fixture(scope="module")
def blocks():
    return {
        "gMLPBlock": built(
            gMLPBlock(hidden_dim=4, intermediate_dim=8, sequence_length=6),
            (1, 6, 4),
        ),
        "aMLPBlock": built(
            gMLPBlock(
                hidden_dim=4, intermediate_dim=8, sequence_length=6, attention_dim=2
            ),
            (1, 6, 4),
        ),
        "MixerBlock": built(
            MixerBlock(
                hidden_dim=4, sequence_length=6, tokens_mlp_dim=3, channels_mlp_dim=5
            ),
            (1, 6, 4),
        ),
        "SpatialGatingUnit": built(SpatialGatingUnit(sequence_length=6), (1, 6, 4)),
        "TinyAttention": built(TinyAttention(attention_dim=2, output_dim=3), (1, 6, 4)),
    }


@pytest.mark.parametrize("shape", [(6, 4), (1, 1, 6, 4)], ids=["rank2", "rank4"])
def test_built_block_refuses_input_of_wrong_rank(blocks, shape):
    for layer in blocks.values():
        with pytest.raises(ValueError, match=r"`inputs` of rank 3.*inputs\.shape"):
            layer(np.zeros(shape, "float32"))


def test_padding_mask_must_match_inputs(blocks):
    for name, layer in blocks.items():
        if name == "MixerBlock":
            continue
        for mask_shape in [(1, 5), (2, 6), (1, 6, 1)]:
            with pytest.raises(ValueError, match=r"`padding_mask`.*Received"):
                layer(
                    np.zeros((1, 6, 4), "float32"),
                    padding_mask=np.ones(mask_shape, bool),
                )


def test_zero_length_input_is_refused(blocks):
    for layer in blocks.values():
        with pytest.raises(ValueError, match="at least one token|inputs.shape"):
            layer(np.zeros((1, 0, 4), "float32"))


def test_empty_or_non_multiple_image_is_refused():
    embed = PatchEmbedding(patch_size=4, hidden_dim=3)
    for shape in [(1, 0, 8, 3), (1, 8, 6, 3)]:
        with pytest.raises(ValueError, match="patch_size=4.*inputs.shape"):
            embed(np.zeros(shape, "float32"))


@pytest.mark.parametrize(
    "make, argument",
    [
        (lambda: PatchEmbedding(patch_size=0, hidden_dim=3), "patch_size"),
        (lambda: PatchEmbedding(patch_size=2, hidden_dim=-1), "hidden_dim"),
        (lambda: PatchEmbedding(patch_size=2.0, hidden_dim=3), "patch_size"),
        (lambda: SpatialGatingUnit(sequence_length=0), "sequence_length"),
        (lambda: SpatialGatingUnit(sequence_length=4, epsilon=0), "epsilon"),
        (lambda: TinyAttention(attention_dim=0, output_dim=3), "attention_dim"),
        (lambda: gMLPBlock(4, 7, 6), "intermediate_dim"),
        (lambda: gMLPBlock(4, 8, 6, dropout=1.0), "dropout"),
        (lambda: gMLPBlock(4, 8, 6, num_heads=3), "num_heads"),
        (lambda: MixerBlock(4, 0, 5, 6), "tokens_mlp_dim"),
    ],
)
def test_bad_constructor_argument_is_named(make, argument):
    with pytest.raises(ValueError, match=f"`?{argument}`?"):
        make()
