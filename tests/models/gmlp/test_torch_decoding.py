"""The raw-PyTorch decoding step against the layers' cached path.

Greedy generation picks the same tokens with the fast step and with every
kernel forced to its plain form, with every weight random. On TensorFlow
and JAX the fast step never runs, and the same comparison checks their
own kernels' forms through `generate()`.
"""

import keras
import keras_hub
import numpy as np
import pytest

from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM
from keras_gmlp.models.gmlp import decoding

VOCABULARY_SIZE = 40
TORCH = keras.backend.backend() == "torch"


def _causal_lm(attention_dim=None, dtype=None, gating="split", quantization=None):
    backbone = gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=16,
        attention_dim=attention_dim,
        causal=True,
        dropout=0.0,
        dtype=dtype,
        gating=gating,
    )
    # Every weight, the spatial bias (ones) and kernel (near zero) included:
    # equal values would hide an indexing bug.
    rng = np.random.default_rng(2)
    for variable in backbone.trainable_weights:
        variable.assign(0.5 * rng.standard_normal(variable.shape))
    model = gMLPCausalLM(backbone)
    if quantization:
        model.quantize(quantization.removesuffix("-varied"))
    if quantization == "int8-varied":
        # Weights-only int8 in one layer, a narrower input range in another.
        blocks = backbone.gmlp_blocks
        blocks[0].expand_dense.inputs_quantizer = None
        blocks[1].output_dense.inputs_quantizer = keras.quantizers.AbsMaxQuantizer(
            value_range=(-8, 7)
        )
    return model


def _fast_step(model):
    return decoding.torch_decoder(model.backbone)


def _padded_prompts(rng, prompt_lengths, length=16):
    token_ids = rng.integers(1, VOCABULARY_SIZE, size=(len(prompt_lengths), length))
    padding_mask = np.arange(length)[None, :] < np.array(prompt_lengths)[:, None]
    return {
        "token_ids": np.where(padding_mask, token_ids, 0).astype("int32"),
        "padding_mask": padding_mask,
    }


def _greedy(model, prompts, choice):
    with use_kernels(choice):
        # compile() drops the generate function traced in another form.
        model.compile(sampler="greedy")
        generated = model.generate(prompts, stop_token_ids=None)
    return keras.ops.convert_to_numpy(generated["token_ids"])


@pytest.mark.parametrize("quantization", [None, "int8"])
@pytest.mark.parametrize("attention_dim", [None, 8])
def test_greedy_tokens_equal_with_and_without_the_fast_step(
    rng, attention_dim, quantization
):
    """Prompts of 1, 4 and 9 tokens, right-padded to 16, in one batch; in
    float32 and with Keras' int8 layers."""
    model = _causal_lm(attention_dim, quantization=quantization)
    with use_kernels("plain"):
        assert _fast_step(model) is None
    assert (_fast_step(model) is not None) == TORCH
    prompts = _padded_prompts(rng, [1, 4, 9])
    plain = _greedy(model, prompts, "plain")
    for choice in ("auto", "fast"):
        np.testing.assert_array_equal(_greedy(model, prompts, choice), plain)
    # The prompts are kept and the continuations are not a constant token.
    np.testing.assert_array_equal(
        np.where(prompts["padding_mask"], plain, 0), prompts["token_ids"]
    )
    assert len(np.unique(plain[:, 9:])) > 3


@pytest.mark.parametrize("quantization", [None, "int8", "int8-varied"])
@pytest.mark.parametrize("attention_dim", [None, 8])
def test_fast_step_equals_the_layers_cached_path(rng, attention_dim, quantization):
    """Logits and caches at every step, from position 5 to 11 (1e-5), in
    float32 and with Keras' int8 layers (their inputs quantized per row)."""
    model = _causal_lm(attention_dim, quantization=quantization)
    decoder = _fast_step(model)
    if not TORCH:
        with use_kernels("fast"):
            assert _fast_step(model) is None
        return
    token_ids = rng.integers(1, VOCABULARY_SIZE, size=(2, 12)).astype("int32")
    layers_cache = tuple(
        block.initial_cache(2, 12) for block in model.backbone.gmlp_blocks
    )
    _, _, layers_cache = model.call_with_cache(token_ids[:, :5], layers_cache, 0)
    decoder_cache = keras.tree.map_structure(lambda x: x.clone(), layers_cache)
    for index in range(5, 12):
        expected, _, layers_cache = model.call_with_cache(
            token_ids[:, index : index + 1], layers_cache, index
        )
        logits, _ = decoder(
            keras.ops.convert_to_tensor(token_ids[:, index]), decoder_cache, index
        )
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(logits),
            keras.ops.convert_to_numpy(expected[:, 0]),
            atol=1e-5,
        )
    for written, reference in zip(
        keras.tree.flatten(decoder_cache), keras.tree.flatten(layers_cache)
    ):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(written),
            keras.ops.convert_to_numpy(reference),
            atol=1e-5,
        )


def test_fast_step_is_skipped_where_it_would_differ():
    """Mixed precision, int4, int8 with another input quantizer, LoRA and
    the gating ablations change what the layers compute, so generation
    takes the layers' path for them."""
    mixed = _causal_lm(dtype="mixed_bfloat16")
    quantized = _causal_lm(quantization="int4")

    class OtherQuantizer(keras.quantizers.AbsMaxQuantizer):
        pass

    other_inputs = _causal_lm(quantization="int8")
    dense = other_inputs.backbone.gmlp_blocks[1].output_dense
    dense.inputs_quantizer = OtherQuantizer()
    adapted = _causal_lm()
    adapted.backbone.gmlp_blocks[0].expand_dense.enable_lora(2)
    additive = _causal_lm(gating="additive")
    for model in (mixed, quantized, other_inputs, adapted, additive):
        assert _fast_step(model) is None


@pytest.mark.parametrize("quantization", [None, "int8"])
def test_generation_uses_weights_assigned_since_the_last_call(rng, quantization):
    """The fast step keeps tensors made from the weights (transposed, int8
    as float32) between calls; weights assigned in between are used."""
    model = _causal_lm(attention_dim=8, quantization=quantization)
    prompts = _padded_prompts(rng, [3, 5])
    _greedy(model, prompts, "auto")
    for variable in model.backbone.weights:
        values = rng.standard_normal(variable.shape)
        if variable.dtype == "int8":
            values = rng.integers(-127, 128, variable.shape)
        variable.assign(values.astype(variable.dtype))
    np.testing.assert_array_equal(
        _greedy(model, prompts, "auto"), _greedy(model, prompts, "plain")
    )


def _sampler(name):
    """A fresh sampler each time: the random ones' seeds start over."""
    samplers = keras_hub.samplers
    return {
        "top_k": lambda: samplers.TopKSampler(k=4, seed=3),
        "top_p": lambda: samplers.TopPSampler(p=0.9, seed=3),
        "random": lambda: samplers.RandomSampler(seed=3, temperature=0.7),
        "beam": lambda: samplers.BeamSampler(num_beams=2),
    }[name]()


@pytest.mark.parametrize(
    "sampler, stop_token_ids",
    [("top_k", (3, 7)), ("top_p", None), ("random", (3, 7)), ("beam", None)],
)
def test_samplers_pick_the_same_tokens_with_and_without_the_fast_step(
    rng, sampler, stop_token_ids
):
    """The PyTorch loop around the fast step (keras-hub's loop for every
    sampler but beam search, which keeps its own) picks the tokens
    keras-hub's loop over the layers picks, seeded draws and early stops
    included."""
    model = _causal_lm(attention_dim=8)
    prompts = _padded_prompts(rng, [2, 6, 3])
    generated = {}
    for choice in ("plain", "auto"):
        with use_kernels(choice):
            model.compile(sampler=_sampler(sampler))
            output = model.generate(prompts, stop_token_ids=stop_token_ids)
        generated[choice] = keras.ops.convert_to_numpy(output["token_ids"])
    np.testing.assert_array_equal(generated["auto"], generated["plain"])
    np.testing.assert_array_equal(
        np.where(prompts["padding_mask"], generated["plain"], 0), prompts["token_ids"]
    )


def _timed_choice(monkeypatch, product_seconds):
    """A fresh `ThreadChoice` whose product takes `product_seconds[count]`
    of a fake clock at each thread count, and whose steps take what the
    step function advances it by."""
    import torch

    from keras_gmlp.models.gmlp.decoding import torch_threads

    clock = [0.0]
    monkeypatch.setattr(torch_threads.time, "perf_counter", lambda: clock[0])

    def product():
        clock[0] += product_seconds[torch.get_num_threads()]

    def step(seconds):
        clock[0] += seconds
        return torch.get_num_threads()

    return torch_threads.ThreadChoice(), product, step


def test_thread_choice_follows_the_faster_count_as_the_load_changes(monkeypatch):
    """Idle, the caller's threads win the timed product; when steps slow
    down threefold the counts are tried again at once, and one thread
    wins under load; the caller's count is back after, after an error
    too."""
    if not TORCH:
        assert _fast_step(_causal_lm()) is None
        return
    import torch

    costs = {1: 2e-4, 2: 1e-4}
    choice, product, step = _timed_choice(monkeypatch, costs)
    callers_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with choice.decoding(2, product) as threads:
            idle = [threads.step(step, 4e-3) for _ in range(5)]
            # Another process takes a core: split products wait for it.
            costs[2] = 5e-2
            slow = threads.step(step, 4e-2)
            loaded = [threads.step(step, 4e-3) for _ in range(3)]
        assert idle == [2] * 5
        assert slow == 2 and loaded == [1, 1, 1]
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError, match="step failed"):
            with choice.decoding(2, product) as threads:
                raise RuntimeError("step failed")
        assert torch.get_num_threads() == 2
        with choice.decoding(1, product) as threads:
            assert threads.step(step, 1e-3) == 1
    finally:
        torch.set_num_threads(callers_threads)
