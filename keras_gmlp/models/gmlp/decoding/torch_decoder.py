"""One-token decoding step of a causal gMLP stack, written directly in PyTorch.

The fast form of the `torch_decoding` kernel (`keras_gmlp.layers._kernels`)
on CPUs, and with `static_cache.py` the library's only raw-torch decoding
code; only `decoding.torch_decoder` makes a `TorchDecoder`. Keras runs PyTorch
eagerly, and every `Layer.__call__` and `keras.ops` call costs tens of
microseconds of Python (argument flattening, dtype standardisation, tensor
conversion). A decoding step runs about 200 of them for arithmetic that
takes a few milliseconds, so on PyTorch generation was bound by that
overhead. `TorchDecoder` computes the same formulas as the layers' cached
`call` with `torch` functions on the variables' values. It also writes each
new token's gates, keys and values into the caches in place and reads only
the positions written so far: `slice_update` on PyTorch copies the whole
cache every step, and the causal mask zeroes every later position anyway.

`gMLPCausalLM.generate` uses it; it owns the caches the decoder updates.
`TorchDecoder.sample` runs keras-hub's sampling loop around it, and each
step on the intra-op thread count `torch_threads.ThreadChoice` measures
faster.

Keras' int8 layers (`quantize("int8")`) are computed as Keras computes
them: each row of a dense layer's inputs quantized by its absolute maximum
(the layer's `AbsMaxQuantizer`), multiplied by the int8 kernel, and the
product divided by the kernel's and the row's scales. The int8 values are
held as float32, which represents their products and sums exactly up to
2**24, so the step runs float matmuls: int8 decoded at float speed (the
layers' path ran 20x slower than float on PyTorch).
"""

import math
import weakref

from keras_gmlp._compat import int8_matmul
from keras_gmlp._compat import tensor_version
from keras_gmlp.models.gmlp.decoding.torch_threads import CHOICE


def reproduces(token_embedding, segment_embedding, blocks, final_norm):
    """Whether `TorchDecoder` computes what these layers compute.

    float32 only (mixed precision casts in places this does not mirror), no
    quantization but Keras' int8 with its default input quantizer, no LoRA
    (it adds to what `kernel` means),
    the split gating only (the others are ablations, not served), and the
    tied output projection without a logit soft cap. Every layer whose
    weights the decoder reads is checked.
    """
    layers = [token_embedding, segment_embedding, final_norm]
    for block in blocks:
        unit = block.spatial_gating_unit
        if unit.gating != "split":
            return False
        layers += [block, block.norm, block.expand_dense, unit, unit.norm]
        layers.append(block.output_dense)
        attention = block.tiny_attention
        if attention is not None:
            layers += [attention, attention.qkv_dense, attention.output_dense]
    for layer in layers:
        policy = layer.dtype_policy
        if (policy.compute_dtype, policy.variable_dtype) != ("float32", "float32"):
            return False
        if not _reproduced_quantization(layer):
            return False
        if getattr(layer, "lora_enabled", False):
            return False
    return token_embedding.tie_weights and token_embedding.logit_soft_cap is None


def _reproduced_quantization(layer):
    """No quantization, or int8 whose inputs (if any) are quantized per
    row by an `AbsMaxQuantizer` into int8, as Keras' default does."""
    mode = getattr(layer, "quantization_mode", None)
    if mode is None:
        return True
    if mode != "int8":
        return False
    from keras.quantizers import AbsMaxQuantizer

    quantizer = getattr(layer, "inputs_quantizer", None)
    return quantizer is None or (
        type(quantizer) is AbsMaxQuantizer
        and quantizer.axis in (None, (-1,))
        and quantizer.output_dtype == "int8"
    )


def _input_quantizer(layer, device):
    """(value range, its upper limit, epsilon) of an int8 layer's input
    quantizer, the last two as tensors on `device`, or None where its
    inputs stay float."""
    import torch

    quantizer = getattr(layer, "inputs_quantizer", None)
    if quantizer is None:
        return None
    limit = torch.tensor(float(quantizer.value_range[1]), device=device)
    epsilon = torch.tensor(float(quantizer.epsilon), device=device)
    return quantizer.value_range, limit, epsilon


# Products of at least this many weights (inputs x outputs) run as
# `(transposed @ x.T).T` when split over threads: for a few rows MKL splits
# that form and not `x @ kernel`. Smaller ones, and every product on one
# thread, run as `x @ kernel`, the faster form there. 4 rows, microbenchmark
# (us, 1 thread x @ kernel / 2 threads x @ kernel / 2 threads transposed):
# 256x1536 100 / 116 / 66; 768x256 36 / 39 / 33; 256x192 10 / 12 / 14.
SPLIT_WEIGHTS = 2**17


# Tensors made from variables' values (an int8 kernel as float32, a kernel
# transposed), kept until the variable is written again. Made again for
# every `generate` call they cost an int8 model 158 of its 500 ms (6
# blocks, 64 tokens). Keyed by `id(value)` (a tensor's `==` is
# elementwise, so it cannot be a weak dictionary key) and dropped when
# the value is freed; no kept tensor may refer to its value, or neither
# would be freed.
_MADE = {}


def _made_from(value, name, make):
    """`make()`, a tensor computed from `value`, made again only once
    `value` has been written since."""
    key = id(value)
    if key not in _MADE or _MADE[key][0]() is not value:
        forget = weakref.ref(value, lambda _: _MADE.pop(key, None))
        _MADE[key] = (forget, {})
    made = _MADE[key][1]
    version = tensor_version(value)
    if name not in made or made[name][0] != version:
        made[name] = (version, make())
    return made[name][1]


class _Dense:
    """`x @ kernel + bias` of a Dense layer (or the tied output table), or
    Keras' int8 product where `int8` is `(kernel_scale, input quantizer,
    int8 kernel or None)`: see `_int8_product`; `kernel` is then the int8
    kernel as float32, or the int8 kernel itself where the product runs in
    int8. `transposed` is the kernel as `(outputs, inputs)` for float
    products of SPLIT_WEIGHTS or more, else None."""

    def __init__(self, kernel, transposed, bias=None, int8=None):
        self.kernel, self.bias, self.int8 = kernel, bias, int8
        self.transposed, self.bias_column = transposed, None
        if transposed is not None and bias is not None:
            self.bias_column = bias[:, None]

    def __call__(self, x, split):
        """`split`: whether PyTorch runs on more than one thread now."""
        import torch

        if self.int8 is not None:
            return _int8_product(x, self._product, *self.int8, self.bias, split)
        if self.bias is None:
            return self._product(x, split)
        # The bias added in the product's own call: one op fewer.
        if split and self.transposed is not None:
            return torch.addmm(self.bias_column, self.transposed, x.T).T
        return torch.addmm(self.bias, x, self.kernel)

    def _product(self, x, split):
        if split and self.transposed is not None:
            return (self.transposed @ x.T).T
        return x @ self.kernel


def _dense_weights(dense):
    """The `_Dense` of a float or int8 `keras.layers.Dense`."""
    bias = None if dense.bias is None else dense.bias.value
    # An int8 layer's `kernel` is its int8 variable.
    value = dense.kernel.value
    if dense.quantization_mode is not None:
        quantizer = _input_quantizer(dense, value.device)
        if quantizer is not None and _multiplies_int8(value.device):
            int8 = (dense.kernel_scale.value, quantizer, value)
            return _Dense(value, None, bias, int8)
    kernel = value
    if dense.quantization_mode is not None:
        kernel = _made_from(value, "float32", value.float)
    transposed = None
    if kernel.numel() >= SPLIT_WEIGHTS:
        transposed = _made_from(value, "transposed", lambda: kernel.T.contiguous())
    if dense.quantization_mode is None:
        return _Dense(kernel, transposed, bias)
    int8 = (dense.kernel_scale.value, quantizer, None)
    return _Dense(kernel, transposed, bias, int8)


# Fast on CPUs: PyTorch's int8 product (int32 sums, as Keras' int8 layers
# compute on PyTorch CPUs) took 5 us where the float product of the same
# int8 values took 15 at batch 4, 128 to 512 (28 against 94 for a
# 4,000-word output table); with it the 4-block width-128 causal LM
# decoded int8 at batch 4 faster than float32 (benchmarks/docs/
# generation.md). CUDA's takes more than 16 rows, so GPUs keep the
# float product.
def _multiplies_int8(device):
    """Whether int8 products on `device` run as int8 matmuls."""
    return device.type == "cpu"


def _embedding_rows(embedding):
    """`(table, row scales)`: the float table, or the int8 table as float32
    with the scale each row is divided by (None for a float table)."""
    value = embedding.embeddings.value
    if embedding.quantization_mode is None:
        return value, None
    table = _made_from(value, "float32", value.float)
    return table, embedding.embeddings_scale.value


def _output_int8(embedding, scales):
    """The `_Dense` int8 tuple of the tied output product of `embedding`
    (whose rows are divided by `scales`), or None for a float table."""
    if scales is None:
        return None
    quantizer = _input_quantizer(embedding, scales.device)
    int8_kernel = None
    if quantizer is not None and _multiplies_int8(scales.device):
        # The int8 table transposed, a view: `(inputs, outputs)`.
        int8_kernel = embedding.embeddings.value.T
    return scales, quantizer, int8_kernel


def _norm_weights(norm):
    gamma = norm.gamma.value if norm.scale else None
    beta = norm.beta.value if norm.center else None
    return gamma, beta, norm.epsilon


class TorchDecoder:
    """Decodes one token at a time through a causal gMLP stack.

    The variables' tensors are looked up once, when the decoder is made,
    so make one per `generate` call.

    Args:
        token_embedding: the tied `keras.layers.ReversibleEmbedding`.
        segment_embedding: the segment `keras.layers.Embedding`; segment 0
            is added to every token.
        blocks: the causal `gMLPBlock`s, in order.
        final_norm: the `keras.layers.LayerNormalization` after the blocks.

    The four must pass `reproduces`.
    """

    def __init__(self, token_embedding, segment_embedding, blocks, final_norm):
        self.token_embeddings, self.token_scales = _embedding_rows(token_embedding)
        # Scores over the vocabulary: the tied table, transposed; the table
        # itself is the `(outputs, inputs)` form.
        self.output = _Dense(
            self.token_embeddings.T,
            self.token_embeddings,
            int8=_output_int8(token_embedding, self.token_scales),
        )
        segments, segment_scales = _embedding_rows(segment_embedding)
        self.segment_zero = segments[0]
        if segment_scales is not None:
            self.segment_zero = segments[0] / segment_scales[0]
        self.final_norm = _norm_weights(final_norm)
        self.blocks = []
        for block in blocks:
            unit = block.spatial_gating_unit
            attention = block.tiny_attention
            self.blocks.append(
                {
                    "norm": _norm_weights(block.norm),
                    "expand": _dense_weights(block.expand_dense),
                    "gate_norm": _norm_weights(unit.norm),
                    "spatial_kernel": unit.kernel.value,
                    "spatial_bias": unit.bias.value,
                    "output": _dense_weights(block.output_dense),
                    "attention": None
                    if attention is None
                    else {
                        "qkv": _dense_weights(attention.qkv_dense),
                        "output": _dense_weights(attention.output_dense),
                        "dim": attention.attention_dim,
                    },
                }
            )

    def thread_choice(self, batch_size):
        """A context on the intra-op thread count found faster, in which
        `.step(decoder, *args)` runs a decoding step of `batch_size` rows
        (see `torch_threads.ThreadChoice`); the caller's count is back
        after."""
        import torch

        dense = self.blocks[0]["expand"] if self.blocks else self.output
        rows = torch.zeros(
            batch_size, dense.kernel.shape[0], device=dense.kernel.device
        )
        return CHOICE.decoding(torch.get_num_threads(), lambda: dense(rows, split=True))

    def sample(self, sampler, threads, prompt, cache, index, mask, stop_token_ids):
        """keras-hub's `Sampler.__call__` loop, in PyTorch: the same tokens.

        From `index` on, each position not in `mask` gets
        `sampler.get_next_token(sampler.compute_probabilities(logits))`, and
        the loop stops once every row holds one of `stop_token_ids` outside
        `mask`. Samplers that keep keras-hub's `Sampler.__call__` (greedy,
        top-k, top-p, random) run this loop; beam and contrastive search
        have loops of their own. Eager keras-hub spent about 0.5 ms a token
        in the loop's own `keras.ops` calls; here they are a few torch ops.

        Args:
            sampler: a `keras_hub.samplers.Sampler`.
            threads: the `ThreadChoice` of a `thread_choice()` context,
                which runs each step.
            prompt: int tensor `(batch, length)`, the prompts, padded.
            cache: as for `__call__`, filled up to `index`.
            index: int, the first position to generate.
            mask: bool tensor like `prompt`, true where a token is kept.
            stop_token_ids: a tuple of ids, or None.

        Returns:
            The generated token ids, `(batch, length)`.
        """
        import torch

        device = self.token_embeddings.device
        prompt = torch.as_tensor(prompt, device=device).clone()
        mask = torch.as_tensor(mask, device=device).bool()
        stops = None
        if stop_token_ids is not None:
            stops = torch.tensor(list(stop_token_ids), device=device)
        for position in range(index, prompt.shape[1]):
            if stops is not None and _every_row_stopped(prompt, stops, mask):
                break
            logits, _ = threads.step(self, prompt[:, position - 1], cache, position - 1)
            token = sampler.get_next_token(sampler.compute_probabilities(logits))
            prompt[:, position] = torch.where(
                mask[:, position], prompt[:, position], token.to(prompt.dtype)
            )
        return prompt

    def __call__(self, token_ids, cache, index):
        """The logits for the tokens at position `index`, updating `cache`.

        Args:
            token_ids: int tensor `(batch,)`, the tokens at `index`.
            cache: one cache per block, shaped as `gMLPBlock.initial_cache`
                makes them, written in place.
            index: int, the tokens' position.

        Returns:
            `(logits, hidden_states)`, `(batch, vocabulary_size)` and
            `(batch, hidden_dim)`.
        """
        import torch

        split = torch.get_num_threads() > 1
        with torch.no_grad():
            x = self.embed(token_ids)
            for block, block_cache in zip(self.blocks, cache):
                x = x + self._block(block, x, block_cache, index, split)
            hidden_states = _layer_norm(x, *self.final_norm)
            return self.output(hidden_states, split), hidden_states

    def embed(self, token_ids):
        """The embeddings of `token_ids` `(batch,)`, segment 0 added."""
        x = self.token_embeddings[token_ids]
        if self.token_scales is not None:
            x = x / self.token_scales[token_ids, None]
        return x + self.segment_zero

    def _block(self, block, x, block_cache, index, split):
        import torch
        import torch.nn.functional as F

        attention = block["attention"]
        if attention is None:
            gate_cache, attention_cache = block_cache, None
        else:
            gate_cache, attention_cache = block_cache
        normed = _layer_norm(x, *block["norm"])
        z = F.gelu(block["expand"](normed, split))
        u, v = torch.split(z, z.shape[-1] // 2, dim=-1)
        gate_cache[:, index] = _layer_norm(v, *block["gate_norm"])
        # Row `index` of each head's spatial weights, over the positions
        # seen, times their gates: `(heads, 1, n) @ (batch, heads, n, c)`.
        # A batched matmul reads the cache in place; the einsum form copied it.
        kernel = block["spatial_kernel"][:, None, index, : index + 1]
        batch, channels = v.shape
        heads = kernel.shape[0]
        context = gate_cache[:, : index + 1].reshape(batch, index + 1, heads, -1)
        projected = torch.matmul(kernel, context.transpose(1, 2))
        projected = projected + block["spatial_bias"][:, index, None, None]
        projected = projected.reshape(batch, channels)
        if attention is not None:
            projected = projected + _tiny_attention(
                attention, normed, attention_cache, index, split
            )
        return block["output"](u * projected, split)


def _every_row_stopped(prompt, stops, mask):
    """keras-hub's stop condition: each row holds a stop id outside `mask`."""
    import torch

    return bool((torch.isin(prompt, stops) & ~mask).any(dim=-1).all())


def _int8_product(x, product, kernel_scale, quantizer, int8_kernel, bias, split):
    """Keras' int8 `Dense` and reversed `ReversibleEmbedding`: the rows of
    `x` rounded to int8 at `limit / (max |row| + epsilon)`, times the int8
    kernel (`int8_matmul` by `int8_kernel` where given, else the float
    `product(rows, split)` of the same values, exact up to 2**24), divided
    by both scales, plus `bias` (or None).

    At a few rows each op costs its dispatch, not its arithmetic (1-3 us
    against 14 us for the product at batch 4, width 128 to 512), so the
    quantization takes as few ops as give Keras' values: the clamp is left
    out where it cannot bind (the limit's rounding never leaves
    `[-limit, limit]`), and the division and bias are one `addcdiv`.
    """
    import torch

    if quantizer is None:
        y = product(x, split)
        if bias is None:
            return y.div_(kernel_scale)
        return torch.addcdiv(bias, y, kernel_scale)
    (low, high), limit, epsilon = quantizer
    # An exact division, as Keras': `high / tensor` is a reciprocal times
    # `high` in PyTorch, which rounds some rows' values the other way. The
    # epsilon is a tensor: a Python float costs 3 us more to wrap.
    largest = torch.linalg.vector_norm(x, math.inf, dim=-1, keepdim=True)
    row_scale = torch.div(limit, largest.add_(epsilon))
    quantized = torch.mul(x, row_scale).round_()
    if low > -high:
        quantized = quantized.clamp_(low, high)
    if int8_kernel is None:
        y = product(quantized, split)
    else:
        y = int8_matmul(quantized.to(torch.int8), int8_kernel).float()
    if bias is None:
        return y.div_(kernel_scale * row_scale)
    return torch.addcdiv(bias, y, kernel_scale * row_scale)


def _layer_norm(x, gamma, beta, epsilon):
    import torch

    return torch.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)


def _tiny_attention(attention, x, cache, index, split):
    """`x`: `(batch, hidden)`. Writes the key and value at `index`."""
    import torch

    query, key, value = torch.split(
        attention["qkv"](x, split), attention["dim"], dim=-1
    )
    cache[:, 0, index] = key
    cache[:, 1, index] = value
    # (batch, 1, d) @ (batch, d, n): one query against the keys seen.
    scores = torch.matmul(query[:, None], cache[:, 0, : index + 1].transpose(1, 2))
    weights = torch.softmax(scores / math.sqrt(attention["dim"]), dim=-1)
    mixed = torch.matmul(weights, cache[:, 1, : index + 1])[:, 0]
    return attention["output"](mixed, split)
