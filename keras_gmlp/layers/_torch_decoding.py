"""One-token decoding step of a causal gMLP stack, written directly in PyTorch.

The fast form of `_kernels.torch_decoder`, and the library's only raw-torch
code; only that function makes a `TorchDecoder`. Keras runs PyTorch
eagerly, and every `Layer.__call__` and `keras.ops` call costs tens of
microseconds of Python (argument flattening, dtype standardisation, tensor
conversion). A decoding step runs about 200 of them for arithmetic that
takes a few milliseconds, so on PyTorch generation was bound by that
overhead. `TorchDecoder` computes the same formulas as the layers' cached
`call` with `torch` functions on the variables' values. It also writes each
new token's gates, keys and values into the caches in place and reads only
the positions written so far: `slice_update` on PyTorch copies the whole
cache every step, and the causal mask zeroes every later position anyway.

`gMLPCausalLM.generate` uses it; it owns the caches the decoder updates,
and decodes inside `TorchDecoder.one_thread()`.

Keras' int8 layers (`quantize("int8")`) are computed as Keras computes
them: each row of a dense layer's inputs quantized by its absolute maximum
(the layer's `AbsMaxQuantizer`), multiplied by the int8 kernel, and the
product divided by the kernel's and the row's scales. The int8 values are
held as float32, which represents their products and sums exactly up to
2**24, so the step runs float matmuls: int8 decoded at float speed (the
layers' path ran 20x slower than float on PyTorch).
"""

import contextlib
import math


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


def _input_quantizer(layer):
    """(value limit, epsilon) of an int8 layer's input quantizer, or None
    where its inputs stay float."""
    quantizer = getattr(layer, "inputs_quantizer", None)
    if quantizer is None:
        return None
    return quantizer.value_range, quantizer.epsilon


def _dense_weights(dense):
    """`(kernel, bias, int8)`: `int8` is None for a float layer, else
    `(kernel_scale, input quantizer)` with the int8 kernel as float32."""
    bias = None if dense.bias is None else dense.bias.value
    if dense.quantization_mode is None:
        return dense.kernel.value, bias, None
    # An int8 layer's `kernel` is its int8 variable.
    kernel = dense.kernel.value.float()
    return kernel, bias, (dense.kernel_scale.value, _input_quantizer(dense))


def _embedding_rows(embedding):
    """`(table, row scales)`: the float table, or the int8 table as float32
    with the scale each row is divided by (None for a float table)."""
    if embedding.quantization_mode is None:
        return embedding.embeddings.value, None
    return embedding.embeddings.value.float(), embedding.embeddings_scale.value


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
        # Scores over the vocabulary: the tied table, transposed.
        self.output = (
            self.token_embeddings.T,
            None,
            None
            if self.token_scales is None
            else (self.token_scales, _input_quantizer(token_embedding)),
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

    @staticmethod
    @contextlib.contextmanager
    def one_thread():
        """Runs what it wraps on one PyTorch intra-op thread, then restores
        the caller's count.

        A decoding step is ~200 ops on a few rows each, too small to split:
        idle, the 6-block aMLP of benchmarks/generation.py decoded as fast
        on one thread as on two. Split, each op waits for every thread, so
        with another process busy on one of 2 cores each op waited a
        scheduler slice and decoding fell from 518 to 22 tokens/s.
        """
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)

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

        with torch.no_grad():
            x = self.token_embeddings[token_ids]
            if self.token_scales is not None:
                x = x / self.token_scales[token_ids, None]
            x = x + self.segment_zero
            for block, block_cache in zip(self.blocks, cache):
                x = x + self._block(block, x, block_cache, index)
            hidden_states = _layer_norm(x, *self.final_norm)
            return _dense(hidden_states, *self.output), hidden_states

    def _block(self, block, x, block_cache, index):
        import torch
        import torch.nn.functional as F

        attention = block["attention"]
        if attention is None:
            gate_cache, attention_cache = block_cache, None
        else:
            gate_cache, attention_cache = block_cache
        normed = _layer_norm(x, *block["norm"])
        z = F.gelu(_dense(normed, *block["expand"]))
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
                attention, normed, attention_cache, index
            )
        return _dense(u * projected, *block["output"])


def _dense(x, kernel, bias, int8):
    """`x @ kernel + bias`, or Keras' int8 product where `int8` is
    `(kernel_scale, input quantizer)`: see `_int8_product`."""
    y = x @ kernel if int8 is None else _int8_product(x, kernel, *int8)
    return y if bias is None else y + bias


def _int8_product(x, kernel, kernel_scale, quantizer):
    """Keras' int8 `Dense` and reversed `ReversibleEmbedding`: the rows of
    `x` rounded to int8 at `limit / (max |row| + epsilon)`, times the int8
    `kernel`, divided by both scales."""
    import torch

    if quantizer is None:
        return (x @ kernel) / kernel_scale
    (low, high), epsilon = quantizer
    row_scale = high / (x.abs().amax(dim=-1, keepdim=True) + epsilon)
    quantized = torch.clamp(torch.round(x * row_scale), low, high)
    return (quantized @ kernel) / (kernel_scale * row_scale)


def _layer_norm(x, gamma, beta, epsilon):
    import torch.nn.functional as F

    return F.layer_norm(x, (x.shape[-1],), gamma, beta, epsilon)


def _tiny_attention(attention, x, cache, index):
    """`x`: `(batch, hidden)`. Writes the key and value at `index`."""
    import torch

    query, key, value = torch.split(
        _dense(x, *attention["qkv"]), attention["dim"], dim=-1
    )
    cache[:, 0, index] = key
    cache[:, 1, index] = value
    # (batch, 1, d) @ (batch, d, n): one query against the keys seen.
    scores = torch.matmul(query[:, None], cache[:, 0, : index + 1].transpose(1, 2))
    weights = torch.softmax(scores / math.sqrt(attention["dim"]), dim=-1)
    mixed = torch.matmul(weights, cache[:, 1, : index + 1])[:, 0]
    return _dense(mixed, *attention["output"])
