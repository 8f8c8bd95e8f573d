"""Cached generation of `gMLPCausalLM` on PyTorch, apart from the layers
(as keras-hub keeps its samplers apart from its layers).

Three paths, one chosen per `generate` call (`decoder_name` says which):

- `"keras-layers"`: the layers' cached `call`, on every backend; on
  PyTorch where the raw step does not reproduce the layers
  (`torch_decoder.reproduces`), or with the kernels forced plain.
- `"eager-torch"`: `torch_decoder.TorchDecoder`, one raw-torch step a
  token on the thread count `torch_threads` finds faster: the CPU path.
- `"cuda-graphs"`: the same formulas as a `static_cache.StaticCacheStep`
  compiled with `mode="reduce-overhead"` (CUDA graphs), when the weights
  live on a CUDA device and the sampler keeps keras-hub's loop; with the
  greedy sampler, the loop too (`greedy_graph.GreedyStaticCacheLoop`).
"""

from keras_gmlp.layers._kernels import uses_fast_form
from keras_gmlp.models.gmlp.decoding import torch_decoder as eager


# Fast on PyTorch CPUs: greedy generation of the 6-block aMLP in
# benchmarks/generation.py went from 21 to 518 tokens/s (JAX: 993), then to
# 1,078 with the sampling loop in torch and threads measured (JAX: 2,076). Eager
# PyTorch spends a decoding step in Keras' per-call Python, not in the
# arithmetic; the raw-torch step skips it and updates the caches in place.
def torch_decoder(backbone):
    """The raw-PyTorch decoding step of a causal `gMLPBackbone`, or None.

    None means: decode through the layers' cached `call`. That is the plain
    form of the `torch_decoding` kernel (`keras_gmlp.layers._kernels`), and
    also what configurations the step does not reproduce take (see
    `torch_decoder.reproduces`).
    """
    if not uses_fast_form("torch_decoding"):
        return None
    parts = (
        backbone.token_embedding,
        backbone.segment_embedding,
        backbone.gmlp_blocks,
        backbone.final_layer_norm,
    )
    if not eager.reproduces(*parts):
        return None
    return eager.TorchDecoder(*parts)


def compile_options(device):
    """`torch.compile`'s options for the static-cache step of a decoder
    whose weights live on `device` (a `torch.device`), or None where the
    eager step runs.

    CPUs keep the eager step: at batch 1-4 it is bound by the arithmetic
    and the thread choice, which a compiled step cannot make.
    """
    if device.type == "cuda":
        return {"mode": "reduce-overhead"}
    return None


def compiles(decoder, sampler, index):
    """Whether `decode` takes the compiled path for `decoder` (a
    `TorchDecoder`), `sampler` and a first generated position `index`."""
    from keras_hub.samplers import Sampler

    return (
        compile_options(decoder.token_embeddings.device) is not None
        and type(sampler).__call__ is Sampler.__call__
        and index >= 1
    )


def decode_compiled(backbone, decoder, sampler, prompt, index, mask, stop_token_ids):
    """keras-hub's sampling loop around the compiled static-cache step of
    `decoder`; `compiles` must hold. Greedy sampling runs the whole loop in
    the graph, `STOP_CHECK_STEPS` tokens a replay (`greedy_graph.sample`);
    other samplers run after each step (`static_cache.sample`)."""
    from keras_gmlp.models.gmlp.decoding import greedy_graph
    from keras_gmlp.models.gmlp.decoding import static_cache

    options = compile_options(decoder.token_embeddings.device)
    batch, length = prompt.shape[0], prompt.shape[1]
    temperature = static_cache.greedy_temperature(sampler)
    if temperature is None:
        step, module = static_cache.compiled_step(
            backbone, decoder, batch, length, options
        )
        return static_cache.sample(
            step, module, sampler, prompt, index, mask, stop_token_ids
        )
    step, module = greedy_graph.compiled_loop(
        backbone,
        decoder,
        batch,
        length,
        options,
        temperature=temperature,
        stop_count=greedy_graph.stop_count(stop_token_ids),
        steps=static_cache.STOP_CHECK_STEPS,
    )
    return greedy_graph.sample(step, module, prompt, index, mask, stop_token_ids)


def decoder_name(model):
    """Which path `model.generate` (a `gMLPCausalLM`) decodes through now:
    `"cuda-graphs"`, `"compiled-torch"` (the compiled step elsewhere, with
    other options), `"eager-torch"` or `"keras-layers"`."""
    decoder = torch_decoder(model.backbone)
    if decoder is None:
        return "keras-layers"
    if not compiles(decoder, model.sampler, index=1):
        return "eager-torch"
    options = compile_options(decoder.token_embeddings.device)
    return (
        "cuda-graphs" if options.get("mode") == "reduce-overhead" else "compiled-torch"
    )
