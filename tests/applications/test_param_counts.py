import keras
import pytest

from keras_gmlp import applications
from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS
from keras_gmlp.utils.variants import MLP_MIXER_VARIANTS


def gmlp_params(num_blocks, hidden_dim, intermediate_dim, patch_size, tokens):
    """timm's gMLP count, summed tensor by tensor from its layout."""
    block = (
        2 * hidden_dim  # norm
        + hidden_dim * intermediate_dim
        + intermediate_dim  # fc1
        + intermediate_dim  # gate.norm over half the channels
        + tokens * tokens
        + tokens  # gate.proj
        + intermediate_dim // 2 * hidden_dim
        + hidden_dim  # fc2
    )
    return _with_stem_norm_and_head(num_blocks * block, hidden_dim, patch_size)


def mixer_params(num_blocks, hidden_dim, tokens_dim, channels_dim, patch_size, tokens):
    """timm's Mixer count, summed tensor by tensor from its layout."""
    block = (
        4 * hidden_dim  # norm1, norm2
        + tokens * tokens_dim
        + tokens_dim
        + tokens_dim * tokens
        + tokens
        + hidden_dim * channels_dim
        + channels_dim
        + channels_dim * hidden_dim
        + hidden_dim
    )
    return _with_stem_norm_and_head(num_blocks * block, hidden_dim, patch_size)


def _with_stem_norm_and_head(blocks, hidden_dim, patch_size):
    stem = patch_size * patch_size * 3 * hidden_dim + hidden_dim
    return stem + blocks + 2 * hidden_dim + hidden_dim * 1000 + 1000


def _tokens(variant):
    return (variant["default_size"] // variant["patch_size"]) ** 2


VARIANTS = {**GMLP_IMAGE_VARIANTS, **MLP_MIXER_VARIANTS}


@pytest.mark.parametrize("name", sorted(GMLP_IMAGE_VARIANTS))
def test_gmlp_table_counts_follow_from_its_sizes(name):
    variant = GMLP_IMAGE_VARIANTS[name]
    assert variant["params"] == gmlp_params(
        variant["num_blocks"],
        variant["hidden_dim"],
        variant["intermediate_dim"],
        variant["patch_size"],
        _tokens(variant),
    )


@pytest.mark.parametrize("name", sorted(MLP_MIXER_VARIANTS))
def test_mixer_table_counts_follow_from_its_sizes(name):
    variant = MLP_MIXER_VARIANTS[name]
    assert variant["params"] == mixer_params(
        variant["num_blocks"],
        variant["hidden_dim"],
        variant["tokens_mlp_dim"],
        variant["channels_mlp_dim"],
        variant["patch_size"],
        _tokens(variant),
    )


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_parameter_count_equals_timm(name):
    # timm's counts (the table's `params`) for the same architectures with
    # the 1000-class head. Variables are created without values: shapes are
    # all count_params needs, and Mixer-L would otherwise allocate 0.8 GB.
    variant = VARIANTS[name]
    with keras.StatelessScope(initialize_variables=False):
        model = getattr(applications, variant["builder"])()
    assert model.name == name
    assert model.count_params() == variant["params"]
    assert model.output_shape == (None, 1000)
