import numpy as np
import pytest

from keras_gmlp.layers import MixerBlock
from tests import numpy_reference as ref
from tests.layers.helpers import REGULARISATION_CASES
from tests.layers.helpers import outputs_in_training
from tests.layers.helpers import to_numpy


@pytest.mark.parametrize("masked", [False, True])
def test_forward_matches_numpy(rng, masked):
    block = MixerBlock(
        hidden_dim=6, tokens_mlp_dim=5, channels_mlp_dim=10, sequence_length=4
    )
    block.build((None, 4, 6))
    shapes = {
        "norm1_gamma": (6,),
        "norm1_beta": (6,),
        "tok_fc1": (4, 5),
        "tok_fc1_bias": (5,),
        "tok_fc2": (5, 4),
        "tok_fc2_bias": (4,),
        "norm2_gamma": (6,),
        "norm2_beta": (6,),
        "ch_fc1": (6, 10),
        "ch_fc1_bias": (10,),
        "ch_fc2": (10, 6),
        "ch_fc2_bias": (6,),
    }
    w = {name: rng.standard_normal(shape) for name, shape in shapes.items()}
    targets = [
        block.token_norm.gamma,
        block.token_norm.beta,
        block.token_expand_dense.kernel,
        block.token_expand_dense.bias,
        block.token_output_dense.kernel,
        block.token_output_dense.bias,
        block.channel_norm.gamma,
        block.channel_norm.beta,
        block.channel_expand_dense.kernel,
        block.channel_expand_dense.bias,
        block.channel_output_dense.kernel,
        block.channel_output_dense.bias,
    ]
    for variable, name in zip(targets, shapes):
        variable.assign(w[name])
    x = rng.standard_normal((3, 4, 6))
    mask = (
        np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], bool) if masked else None
    )
    got = block(x.astype("float32"), padding_mask=mask)
    np.testing.assert_allclose(
        to_numpy(got), ref.mixer_block(x, w, mask=mask), atol=1e-5, rtol=1e-5
    )


def test_padded_tokens_do_not_reach_real_ones(rng):
    """Whatever the padded positions hold (NaN included), the real tokens'
    outputs are the same."""
    block = MixerBlock(6, 5, 10, 8)
    x = rng.standard_normal((2, 8, 6)).astype("float32")
    mask = np.arange(8)[None] < np.array([[5], [3]])
    noisy = np.where(mask[:, :, None], x, 1e4 * rng.standard_normal(x.shape))
    noisy[1, 6] = np.nan
    first = to_numpy(block(x, padding_mask=mask))
    second = to_numpy(block(noisy.astype("float32"), padding_mask=mask))
    np.testing.assert_allclose(first[mask], second[mask], atol=1e-5)
    with pytest.raises(ValueError, match="padding_mask"):
        block(x, padding_mask=mask[:, :4])


def test_config_round_trip():
    block = MixerBlock(8, 4, 16, 9, drop_path_rate=0.1, dropout=0.1)
    assert MixerBlock.from_config(block.get_config()).get_config() == block.get_config()


def test_wrong_token_count():
    block = MixerBlock(8, 4, 16, 9)
    with pytest.raises(ValueError, match=r"\(batch, 9, 8\)"):
        block(np.zeros((1, 10, 8), "float32"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tokens_mlp_dim": 0}, "tokens_mlp_dim"),
        ({"drop_path_rate": 1.0}, "drop_path_rate"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = dict(
        hidden_dim=8, tokens_mlp_dim=4, channels_mlp_dim=16, sequence_length=9
    )
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        MixerBlock(**arguments)


@pytest.mark.parametrize("rates, regularised", REGULARISATION_CASES)
def test_dropout_and_stochastic_depth_act_only_in_training(rng, rates, regularised):
    block = MixerBlock(6, 5, 10, 4, **rates)
    x = rng.standard_normal((16, 4, 6)).astype("float32")
    training = outputs_in_training(block, x, regularised)
    if "drop_path_rate" in rates:
        # Both residual branches of a sample can be dropped: then output = input.
        dropped = np.all(training == x, axis=(1, 2))
        assert dropped.sum() < len(x)
