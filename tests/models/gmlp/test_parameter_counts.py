"""gMLPBackbone's embedding / non-embedding parameter split, by formula."""

import pytest

from keras_gmlp.models import gMLPBackbone


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_parameter_split_matches_formula(attention_dim):
    vocabulary, segments, layers, d, f, n = 97, 3, 2, 16, 24, 10
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary,
        num_segments=segments,
        num_layers=layers,
        hidden_dim=d,
        intermediate_dim=f,
        max_sequence_length=n,
        attention_dim=attention_dim,
    )
    half = f // 2
    block = (
        2 * d  # pre-norm
        + d * f
        + f  # expansion
        + 2 * half  # the gate's norm
        + n * n
        + n  # spatial weights and bias
        + half * d
        + d  # projection back to d_model
    )
    if attention_dim:
        # qkv without bias, output projection to d_ffn / 2 with bias.
        block += d * 3 * attention_dim + attention_dim * half + half
    embedding = (vocabulary + segments) * d
    non_embedding = layers * block + 2 * d  # + final norm
    assert backbone.count_embedding_params() == embedding
    assert backbone.count_non_embedding_params() == non_embedding
    assert backbone.count_params() == embedding + non_embedding
