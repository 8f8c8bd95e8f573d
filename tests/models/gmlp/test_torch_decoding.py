"""The raw-PyTorch decoding step against the layers' cached path.

Greedy generation picks the same tokens with the fast step and with every
kernel forced to its plain form, with every weight random. On TensorFlow
and JAX the fast step never runs, and the same comparison checks their
own kernels' forms through `generate()`.
"""

import keras
import numpy as np
import pytest

from keras_gmlp.layers._kernels import torch_decoder
from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM

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
    backbone = model.backbone
    return torch_decoder(
        backbone.token_embedding,
        backbone.segment_embedding,
        backbone.gmlp_blocks,
        backbone.final_layer_norm,
    )


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


def test_decoding_runs_on_one_thread_and_restores_the_callers_count(rng, monkeypatch):
    """On PyTorch the decoding steps run on one intra-op thread (a busy
    core stalls every split op) and the caller's thread count comes back,
    after a failure too. Elsewhere no step is made and nothing changes."""
    if not TORCH:
        assert _fast_step(_causal_lm()) is None
        return
    import torch

    from keras_gmlp.layers._torch_decoding import TorchDecoder

    threads_seen = []
    decode = TorchDecoder.__call__

    def recording_call(self, *args):
        threads_seen.append(torch.get_num_threads())
        return decode(self, *args)

    monkeypatch.setattr(TorchDecoder, "__call__", recording_call)
    model = _causal_lm()
    callers_threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        _greedy(model, _padded_prompts(rng, [2, 5]), "auto")
        assert threads_seen and set(threads_seen) == {1}
        assert torch.get_num_threads() == 3

        def failing_call(self, *args):
            raise RuntimeError("step failed")

        monkeypatch.setattr(TorchDecoder, "__call__", failing_call)
        with pytest.raises(RuntimeError, match="step failed"):
            _greedy(model, _padded_prompts(rng, [2, 5]), "auto")
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(callers_threads)
