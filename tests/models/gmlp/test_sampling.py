"""Stochastic samplers through the cached decoding path, against numpy.

A tiny causal aMLP with every weight randomised generates two tokens after
the same prompt in many rows at once. For each sampler the allowed tokens and
their probabilities are computed here in numpy from the model's uncached
logits, following each method's definition:

- temperature: softmax(logits / T);
- top-k: the k most probable tokens, renormalised;
- top-p (nucleus): the most probable tokens, in order, while the probability
  mass before each is below p, renormalised.

The first generated token comes from the prefilled cache, the second from
one incremental step. Checks: no token outside the allowed set, at either
step (exact); and for the first token, each allowed token's count within 5
binomial standard deviations of N * probability (a false alarm per token
about once in 1.7 million runs).
"""

import keras
import keras_hub
import numpy as np
import pytest

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM

VOCABULARY_SIZE = 24
PROMPT = np.array([5, 9, 3, 17], "int32")
ROWS = 512
LENGTH = len(PROMPT) + 2


def _randomised_causal_lm():
    backbone = gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        hidden_dim=16,
        intermediate_dim=32,
        attention_dim=8,
        max_sequence_length=LENGTH,
        causal=True,
        dropout=0.0,
    )
    rng = np.random.default_rng(3)
    for variable in backbone.weights:
        variable.assign(0.5 * rng.standard_normal(variable.shape))
    return gMLPCausalLM(backbone, preprocessor=None)


def _softmax(logits):
    z = np.exp(logits - logits.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _top_k(probabilities, k):
    keep = np.zeros_like(probabilities, bool)
    order = np.argsort(-probabilities, axis=-1)[..., :k]
    np.put_along_axis(keep, order, True, axis=-1)
    return keep


def _top_p(probabilities, p):
    order = np.argsort(-probabilities, axis=-1)
    ordered = np.take_along_axis(probabilities, order, axis=-1)
    mass_before = np.cumsum(ordered, axis=-1) - ordered
    keep = np.zeros_like(probabilities, bool)
    np.put_along_axis(keep, order, mass_before < p, axis=-1)
    return keep


SAMPLERS = {
    "temperature_0.7": (
        lambda: keras_hub.samplers.RandomSampler(temperature=0.7, seed=1),
        lambda p: np.ones_like(p, bool),
        0.7,
    ),
    "top_k_4_temperature_1.5": (
        lambda: keras_hub.samplers.TopKSampler(k=4, temperature=1.5, seed=2),
        lambda p: _top_k(p, 4),
        1.5,
    ),
    "top_p_0.6": (
        lambda: keras_hub.samplers.TopPSampler(p=0.6, seed=3),
        lambda p: _top_p(p, 0.6),
        1.0,
    ),
}


def _distribution(model, token_ids, position, keep_fn, temperature):
    """Filtered, renormalised next-token probabilities after `position`."""
    logits = model({"token_ids": token_ids, "padding_mask": np.ones_like(token_ids)})
    logits = keras.ops.convert_to_numpy(keras.ops.cast(logits, "float32"))
    probabilities = _softmax(logits[:, position].astype("float64") / temperature)
    keep = keep_fn(probabilities)
    filtered = np.where(keep, probabilities, 0.0)
    return keep, filtered / filtered.sum(-1, keepdims=True)


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_cached_sampling_matches_the_filtered_distribution(name):
    make_sampler, keep_fn, temperature = SAMPLERS[name]
    model = _randomised_causal_lm()
    model.compile(sampler=make_sampler())
    token_ids = np.zeros((ROWS, LENGTH), "int32")
    token_ids[:, : len(PROMPT)] = PROMPT
    padding_mask = np.zeros((ROWS, LENGTH), bool)
    padding_mask[:, : len(PROMPT)] = True
    output = model.generate(
        {"token_ids": token_ids, "padding_mask": padding_mask}, stop_token_ids=None
    )
    generated = keras.ops.convert_to_numpy(output["token_ids"])
    np.testing.assert_array_equal(
        generated[:, : len(PROMPT)], token_ids[:, : len(PROMPT)]
    )

    # First token (from the prefilled cache): support and frequencies.
    first = generated[:, len(PROMPT)]
    keep, probabilities = _distribution(
        model, generated[:1], len(PROMPT) - 1, keep_fn, temperature
    )
    keep, probabilities = keep[0], probabilities[0]
    assert 2 <= keep.sum() < VOCABULARY_SIZE or name.startswith("temperature")
    assert keep[first].all(), (
        f"{name}: sampled {sorted(set(first[~keep[first]]))}, masked out"
    )
    counts = np.bincount(first, minlength=VOCABULARY_SIZE)
    expected = ROWS * probabilities
    bound = 5 * np.sqrt(ROWS * probabilities * (1 - probabilities)) + 1e-9
    assert (np.abs(counts - expected) <= bound).all(), (
        f"{name}: counts {counts.tolist()} against expected {np.round(expected, 1).tolist()}"
    )

    # Second token (one incremental cached step): within each row's support.
    keep, _ = _distribution(model, generated, len(PROMPT), keep_fn, temperature)
    second = generated[:, len(PROMPT) + 1]
    allowed = keep[np.arange(ROWS), second]
    assert allowed.all(), f"{name}: {np.sum(~allowed)} second tokens were masked out"
