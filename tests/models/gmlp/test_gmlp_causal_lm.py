import keras
import numpy as np
import pytest

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM
from keras_gmlp.models import gMLPCausalLMPreprocessor

VOCABULARY_SIZE = 50


def _causal_lm(
    attention_dim=None,
    max_sequence_length=16,
    preprocessor=None,
    vocabulary_size=VOCABULARY_SIZE,
    **kwargs,
):
    config = dict(
        vocabulary_size=vocabulary_size,
        num_layers=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=max_sequence_length,
        attention_dim=attention_dim,
        causal=True,
        dropout=0.0,
    )
    config.update(kwargs)
    backbone = gMLPBackbone(**config)
    _perturb_spatial_weights(backbone)
    return gMLPCausalLM(backbone, preprocessor)


def _perturb_spatial_weights(backbone):
    """W starts near zero; make it matter so the checks see token mixing."""
    rng = np.random.default_rng(1)
    for block in backbone.gmlp_blocks:
        sgu = block.spatial_gating_unit
        sgu.kernel.assign(rng.standard_normal(sgu.kernel.shape) * 0.3)


def _to_numpy(x):
    return keras.ops.convert_to_numpy(keras.ops.cast(x, "float32"))


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_later_tokens_never_change_earlier_logits(rng, attention_dim):
    model = _causal_lm(attention_dim)
    token_ids = rng.integers(5, VOCABULARY_SIZE, size=(2, 12)).astype("int32")
    changed = token_ids.copy()
    changed[:, 7:] = rng.integers(5, VOCABULARY_SIZE, size=(2, 5))
    mask = np.ones((2, 12), "int32")
    before = _to_numpy(model({"token_ids": token_ids, "padding_mask": mask}))
    after = _to_numpy(model({"token_ids": changed, "padding_mask": mask}))
    np.testing.assert_allclose(after[:, :7], before[:, :7], atol=1e-6)
    assert np.abs(after[:, 7:] - before[:, 7:]).max() > 1e-4


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_cached_logits_equal_uncached_at_every_step(rng, attention_dim):
    model = _causal_lm(attention_dim)
    token_ids = rng.integers(5, VOCABULARY_SIZE, size=(2, 12)).astype("int32")
    full = _to_numpy(
        model({"token_ids": token_ids, "padding_mask": np.ones_like(token_ids)})
    )
    # Prefill 5 tokens into a cache sized for the whole sequence, then step.
    cache = tuple(block.initial_cache(2, 12) for block in model.backbone.gmlp_blocks)
    logits, _, cache = model.call_with_cache(token_ids[:, :5], cache, 0)
    steps = [_to_numpy(logits)]
    for index in range(5, 12):
        logits, _, cache = model.call_with_cache(
            token_ids[:, index : index + 1], cache, index
        )
        steps.append(_to_numpy(logits))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-4)


@pytest.mark.slow
def test_generate_continues_a_memorised_sentence(corpus, tokenizer):
    """Trained on one sentence of the Python reference, greedy generation
    from two prompts of different lengths reproduces it and stops at [SEP]."""
    words = corpus[0].lower().split()[:10]
    sentence = " ".join(words)
    preprocessor = gMLPCausalLMPreprocessor(tokenizer, sequence_length=32)
    model = _causal_lm(
        attention_dim=16,
        max_sequence_length=32,
        preprocessor=preprocessor,
        vocabulary_size=tokenizer.vocabulary_size(),
        hidden_dim=64,
        intermediate_dim=128,
    )
    model.compile(optimizer=keras.optimizers.Adam(3e-3), sampler="greedy")
    history = model.fit([sentence] * 16, batch_size=16, epochs=60, verbose=0)
    assert history.history["loss"][-1] < 0.05 * history.history["loss"][0]
    prompts = [" ".join(words[:2]), " ".join(words[:5])]
    outputs = model.generate(prompts, max_length=32)
    expected = tokenizer.detokenize(tokenizer(sentence))
    for output in outputs:
        assert _text(output) == _text(expected)


def _text(value):
    value = keras.ops.convert_to_numpy(value) if not isinstance(value, str) else value
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode() if isinstance(value, bytes) else value


def test_generation_longer_than_backbone_is_refused(tokenizer):
    preprocessor = gMLPCausalLMPreprocessor(tokenizer, sequence_length=16)
    model = _causal_lm(
        preprocessor=preprocessor, vocabulary_size=tokenizer.vocabulary_size()
    )
    with pytest.raises(ValueError, match="max_length=40"):
        model.generate(["the"], max_length=40)


def test_prompt_filling_the_length_is_refused(tokenizer, corpus):
    preprocessor = gMLPCausalLMPreprocessor(tokenizer, sequence_length=16)
    model = _causal_lm(
        preprocessor=preprocessor, vocabulary_size=tokenizer.vocabulary_size()
    )
    with pytest.raises(ValueError, match="nothing is left to generate"):
        model.generate([corpus[0]], max_length=16)


def test_bad_sampler_name():
    model = _causal_lm()
    with pytest.raises(ValueError, match="not_a_sampler"):
        model.compile(sampler="not_a_sampler")


def test_bidirectional_backbone_is_refused():
    backbone = gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
    )
    with pytest.raises(ValueError, match="causal=True"):
        gMLPCausalLM(backbone)


def _greedy_without_cache(model, token_ids, prompt_lengths):
    """Greedy decoding by a full forward pass per token, in numpy."""
    token_ids = token_ids.copy()
    mask = np.ones_like(token_ids)
    for index in range(min(prompt_lengths), token_ids.shape[1]):
        logits = _to_numpy(model({"token_ids": token_ids, "padding_mask": mask}))
        chosen = logits[:, index - 1].argmax(-1)
        still_prompt = index < np.asarray(prompt_lengths)
        token_ids[:, index] = np.where(still_prompt, token_ids[:, index], chosen)
    return token_ids


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_greedy_generate_equals_decoding_without_a_cache(rng, attention_dim):
    """Prompts of 3 and 6 tokens: every backend's cached loop (PyTorch's
    direct decoder included) picks the tokens full forward passes pick."""
    model = _causal_lm(attention_dim, hidden_dim=32, intermediate_dim=64)
    model.compile(sampler="greedy")
    prompt_lengths = [3, 6]
    token_ids = rng.integers(5, VOCABULARY_SIZE, size=(2, 16)).astype("int32")
    padding_mask = np.arange(16)[None, :] < np.array(prompt_lengths)[:, None]
    token_ids = np.where(padding_mask, token_ids, 0).astype("int32")
    expected = _greedy_without_cache(model, token_ids, prompt_lengths)
    generated = model.generate(
        {"token_ids": token_ids, "padding_mask": padding_mask}, stop_token_ids=None
    )
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(generated["token_ids"]), expected
    )
