"""MaskedLMAccuracy, MaskedLMPerplexity and CausalLMPerplexity against numpy
formulas: only real tokens count, token by token across batches."""

import keras
import numpy as np
import pytest

from keras_gmlp.models import CausalLMPerplexity
from keras_gmlp.models import MaskedLMAccuracy
from keras_gmlp.models import MaskedLMPerplexity
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM
from keras_gmlp.models import gMLPMaskedLM

VOCABULARY_SIZE = 11


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _reference(labels, logits, weights):
    """(accuracy, perplexity) over the tokens with nonzero weight."""
    real = weights > 0
    log_probabilities = np.take_along_axis(
        _log_softmax(logits), labels[..., None], axis=-1
    )[..., 0]
    w = weights[real]
    cross_entropy = -(log_probabilities[real] * w).sum() / w.sum()
    correct = (logits.argmax(-1) == labels)[real]
    return (correct * w).sum() / w.sum(), np.exp(cross_entropy)


def _masked_batch(rng, batch=3, slots=5, real_counts=(5, 2, 3)):
    """Labels and weights as keras-hub's MaskedLMPreprocessor yields them:
    padded slots have label 0 ("[PAD]") and weight 0."""
    logits = rng.standard_normal((batch, slots, VOCABULARY_SIZE)).astype("float32")
    labels = rng.integers(5, VOCABULARY_SIZE, size=(batch, slots))
    weights = (np.arange(slots)[None] < np.array(real_counts)[:, None]).astype(
        "float32"
    )
    labels = np.where(weights > 0, labels, 0).astype("int32")
    # Make some real predictions right, so accuracy is not trivially 0.
    logits[0, 0, labels[0, 0]] += 10.0
    logits[1, 1, labels[1, 1]] += 10.0
    # Padded slots are confidently wrong: counting them would show.
    logits[weights == 0] = 0.0
    logits[..., 0][weights == 0] = -20.0
    return labels, logits, weights


def _value(metric):
    return float(keras.ops.convert_to_numpy(metric.result()))


@pytest.mark.parametrize("use_sample_weight", [True, False])
def test_masked_lm_metrics_match_numpy(rng, use_sample_weight):
    labels, logits, weights = _masked_batch(rng)
    accuracy, perplexity = MaskedLMAccuracy(), MaskedLMPerplexity()
    sample_weight = weights if use_sample_weight else None
    for metric in (accuracy, perplexity):
        metric.update_state(labels, logits, sample_weight=sample_weight)
    expected_accuracy, expected_perplexity = _reference(labels, logits, weights)
    np.testing.assert_allclose(_value(accuracy), expected_accuracy, rtol=1e-6)
    np.testing.assert_allclose(_value(perplexity), expected_perplexity, rtol=1e-5)


def test_padded_slots_do_not_count(rng):
    labels, logits, weights = _masked_batch(rng)
    padded = (
        np.pad(labels, ((0, 0), (0, 4))),
        np.pad(logits, ((0, 0), (0, 4), (0, 0))),
        np.pad(weights, ((0, 0), (0, 4))),
    )
    for metric_cls in (MaskedLMAccuracy, MaskedLMPerplexity):
        short, long = metric_cls(), metric_cls()
        short.update_state(labels, logits, sample_weight=weights)
        long.update_state(*padded[:2], sample_weight=padded[2])
        np.testing.assert_allclose(_value(long), _value(short), rtol=1e-6)


def test_sample_weight_alone_masks_when_padding_id_is_none(rng):
    labels, logits, weights = _masked_batch(rng)
    metric = MaskedLMPerplexity(padding_token_id=None)
    metric.update_state(labels, logits, sample_weight=weights)
    np.testing.assert_allclose(
        _value(metric), _reference(labels, logits, weights)[1], rtol=1e-5
    )
    # Without either signal every slot counts, padding included.
    unmasked = MaskedLMPerplexity(padding_token_id=None)
    unmasked.update_state(labels, logits)
    np.testing.assert_allclose(
        _value(unmasked),
        _reference(labels, logits, np.ones_like(weights))[1],
        rtol=1e-5,
    )


def test_accumulates_per_token_across_batches(rng):
    first, second = _masked_batch(rng), _masked_batch(rng, real_counts=(1, 1, 0))
    metric = MaskedLMPerplexity()
    metric.update_state(*first[:2], sample_weight=first[2])
    metric.update_state(*second[:2], sample_weight=second[2])
    # One pool of tokens, not the mean of two batch perplexities.
    joined = [np.concatenate([a, b]) for a, b in zip(first, second)]
    np.testing.assert_allclose(_value(metric), _reference(*joined)[1], rtol=1e-5)
    metric.reset_state()
    assert _value(metric) == 0.0


def test_probabilities_input_and_per_sequence_weights(rng):
    labels, logits, weights = _masked_batch(rng)
    probabilities = np.exp(_log_softmax(logits))
    metric = MaskedLMPerplexity(from_logits=False)
    metric.update_state(labels, probabilities, sample_weight=np.array([1.0, 0.0, 1.0]))
    keep = weights * np.array([1.0, 0.0, 1.0])[:, None]
    np.testing.assert_allclose(
        _value(metric), _reference(labels, logits, keep)[1], rtol=1e-4
    )


def test_config_round_trip():
    for metric in (
        MaskedLMAccuracy(padding_token_id=None, name="acc"),
        MaskedLMPerplexity(from_logits=False, padding_token_id=3),
        CausalLMPerplexity(),
    ):
        revived = metric.__class__.from_config(metric.get_config())
        assert revived.get_config() == metric.get_config()
        assert (
            keras.saving.deserialize_keras_object(
                keras.saving.serialize_keras_object(metric)
            ).get_config()
            == metric.get_config()
        )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"padding_token_id": -1}, "padding_token_id"),
        ({"padding_token_id": 1.5}, "padding_token_id"),
        ({"from_logits": "yes"}, "from_logits"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MaskedLMPerplexity(**kwargs)


def test_bad_shapes():
    with pytest.raises(ValueError, match="y_true.shape"):
        MaskedLMAccuracy().update_state(np.zeros((2,)), np.zeros((2, 4)))


def _backbone(**kwargs):
    return gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=12,
        dropout=0.0,
        **kwargs,
    )


def test_masked_lm_evaluate_counts_only_real_masked_tokens(rng):
    model = gMLPMaskedLM(_backbone(attention_dim=4))
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[MaskedLMAccuracy(), MaskedLMPerplexity()],
    )
    token_ids = rng.integers(5, VOCABULARY_SIZE, size=(4, 12)).astype("int32")
    x = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
        "mask_positions": np.tile(np.arange(1, 7, dtype="int32"), (4, 1)),
    }
    labels, _, weights = _masked_batch(rng, batch=4, slots=6, real_counts=(6, 2, 3, 1))
    scores = model.evaluate(
        x, labels, sample_weight=weights, batch_size=3, verbose=0, return_dict=True
    )
    logits = keras.ops.convert_to_numpy(model(x))
    accuracy, perplexity = _reference(labels, logits, weights)
    np.testing.assert_allclose(scores["masked_lm_accuracy"], accuracy, rtol=1e-5)
    np.testing.assert_allclose(scores["masked_lm_perplexity"], perplexity, rtol=1e-4)
    # The loss averages over the padded slots too: exp(loss) is not it.
    assert not np.isclose(np.exp(scores["loss"]), perplexity, rtol=1e-2)


def test_causal_lm_perplexity_over_real_tokens(rng):
    model = gMLPCausalLM(_backbone(causal=True))
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[CausalLMPerplexity()],
    )
    lengths = np.array([12, 7, 4])
    padding_mask = (np.arange(12)[None] < lengths[:, None]).astype("int32")
    token_ids = np.where(
        padding_mask, rng.integers(5, VOCABULARY_SIZE, size=(3, 12)), 0
    ).astype("int32")
    # As the causal preprocessor lays it out: y is x shifted by one.
    x = {"token_ids": token_ids[:, :-1], "padding_mask": padding_mask[:, :-1]}
    y, weights = token_ids[:, 1:], padding_mask[:, 1:].astype("float32")
    scores = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)
    logits = keras.ops.convert_to_numpy(model(x))
    np.testing.assert_allclose(
        scores["causal_lm_perplexity"], _reference(y, logits, weights)[1], rtol=1e-4
    )
