"""Shared set-up for the layer tests: random weights in, seeds pinned."""

import keras
import numpy as np


def random_block_weights(
    rng, hidden, intermediate, length, attention_dim=None, heads=1, gated=None
):
    """Random gMLP block weights, large enough that every term matters.
    `gated`: the SGU's output channels (half of `intermediate` by default,
    the split gating's)."""
    half = gated or intermediate // 2
    w = {
        "norm_gamma": 1 + 0.1 * rng.standard_normal(hidden),
        "norm_beta": 0.1 * rng.standard_normal(hidden),
        "U": rng.standard_normal((hidden, intermediate)) / np.sqrt(hidden),
        "U_bias": 0.1 * rng.standard_normal(intermediate),
        "sgu_gamma": 1 + 0.1 * rng.standard_normal(half),
        "sgu_beta": 0.1 * rng.standard_normal(half),
        "W": rng.standard_normal((heads, length, length)) / np.sqrt(length),
        "b": 1 + 0.1 * rng.standard_normal((heads, length)),
        "V": rng.standard_normal((half, hidden)) / np.sqrt(half),
        "V_bias": 0.1 * rng.standard_normal(hidden),
    }
    if attention_dim is not None:
        w["qkv_kernel"] = rng.standard_normal((hidden, 3 * attention_dim)) / np.sqrt(
            hidden
        )
        w["attn_out_kernel"] = rng.standard_normal((attention_dim, half)) / np.sqrt(
            attention_dim
        )
        w["attn_out_bias"] = 0.1 * rng.standard_normal(half)
    return w


def assign_sgu_weights(sgu, w):
    sgu.norm.gamma.assign(w["sgu_gamma"])
    sgu.norm.beta.assign(w["sgu_beta"])
    sgu.kernel.assign(w["W"])
    sgu.bias.assign(w["b"])


def assign_block_weights(block, w):
    block.norm.gamma.assign(w["norm_gamma"])
    block.norm.beta.assign(w["norm_beta"])
    block.expand_dense.kernel.assign(w["U"])
    block.expand_dense.bias.assign(w["U_bias"])
    assign_sgu_weights(block.spatial_gating_unit, w)
    block.output_dense.kernel.assign(w["V"])
    block.output_dense.bias.assign(w["V_bias"])
    if block.tiny_attention is not None:
        block.tiny_attention.qkv_dense.kernel.assign(w["qkv_kernel"])
        block.tiny_attention.output_dense.kernel.assign(w["attn_out_kernel"])
        block.tiny_attention.output_dense.bias.assign(w["attn_out_bias"])


def seed_generators(layer):
    """All SeedGenerators of `layer` and its sublayers."""
    found = []
    for sublayer in [layer] + list(layer._flatten_layers(include_self=False)):
        for value in vars(sublayer).values():
            if isinstance(value, keras.random.SeedGenerator):
                found.append(value)
    return found


def call_with_pinned_seeds(layer, *args, **kwargs):
    """Calls `layer`, then rewinds its random state so the next call draws
    the same dropout and stochastic-depth masks. The global seed is reset
    too: torch's Dropout without a seed draws from torch's global RNG."""
    keras.utils.set_random_seed(1234)
    generators = seed_generators(layer)
    states = [keras.ops.convert_to_numpy(g.state.value) for g in generators]
    outputs = layer(*args, **kwargs)
    for generator, state in zip(generators, states):
        generator.state.assign(state)
    return outputs


def to_numpy(x):
    return keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")).astype(np.float64)


# (rates, whether training changes the output) for a block's dropout and
# stochastic depth.
REGULARISATION_CASES = [
    ({}, False),
    ({"dropout": 0.3}, True),
    ({"drop_path_rate": 0.5}, True),
]


def outputs_in_training(block, x, regularised):
    """Checks that `block` differs from inference in training exactly when it
    is regularised, and returns its training output."""
    inference = to_numpy(block(x, training=False))
    training = to_numpy(block(x, training=True))
    if regularised:
        assert np.abs(training - inference).max() > 1e-3
    else:
        np.testing.assert_array_equal(training, inference)
    return training
