"""The library's backend- and device-specific kernels, all in one place.

Each kernel has two forms that compute the same values up to float32
round-off: a plain form, the formula Keras itself uses, and a fast form that
a benchmark showed to be faster on some backend or device. By default
("auto") each kernel takes its fast form exactly where it was measured to
help; the comment above each kernel gives the figure, from
benchmarks/docs/throughput.md. The layers call these functions and never look at the
backend or the device themselves.

`use_kernels` forces every kernel to one form, so that tests can run each
fast form on a CPU and compare it with the plain one:

```python
with use_kernels("plain"):
    expected = block(x)
with use_kernels("fast"):
    np.testing.assert_allclose(block(x), expected, atol=1e-5)
```

The choice is read when a layer runs its `call`: a function that XLA has
already traced keeps the forms it was traced with.
"""

import contextlib
import functools
import math

import keras
from keras import ops

KERNEL_NAMES = (
    "gelu",
    "layer_norm",
    "rank2_dense",
    "spatial_projection",
    "torch_decoding",
)
CHOICES = ("auto", "fast", "plain", "accelerator")
_choice = "auto"


@contextlib.contextmanager
def use_kernels(choice):
    """Forces the form of every kernel inside a `with` block.

    Args:
        choice: `"auto"` (the default outside any `with` block: each kernel
            takes its fast form where it was measured to be faster),
            `"fast"` (every fast form, on any device) or `"plain"` (Keras'
            formulas everywhere), or `"accelerator"` (the forms `"auto"`
            takes on a GPU, also on a CPU: what
            benchmarks/hlo_census.py compiles to show a GPU's HLO). The
            PyTorch decoding step
            (`torch_decoding`, made by
            `keras_gmlp.models.gmlp.decoding.torch_decoder`) runs only on
            the PyTorch backend, so `"fast"` cannot force it elsewhere.
    """
    global _choice
    if choice not in CHOICES:
        raise ValueError(
            f"Argument `choice` must be one of {CHOICES}. Received: choice={choice!r}"
        )
    previous, _choice = _choice, choice
    try:
        yield
    finally:
        _choice = previous


def uses_fast_form(name):
    """Whether kernel `name` (one of `KERNEL_NAMES`) takes its fast form now."""
    if name not in KERNEL_NAMES:
        raise ValueError(
            f"Argument `name` must be one of {KERNEL_NAMES}. Received: name={name!r}"
        )
    backend = keras.backend.backend()
    if _choice == "plain":
        return False
    if name == "torch_decoding":
        return backend == "torch"
    if _choice == "fast":
        return True
    if backend == "jax":
        # Every fast form, on every device: faster on JAX CPUs (the figures
        # above each kernel) and on one H200, all against Keras' formulas
        # in one session (bfloat16, batch 128 at 224, `fit`'s steps;
        # benchmarks/docs/accelerator.md): gMLP-S/16 training 3,872 against
        # 3,526 images/s, Mixer-B/16 4,049 against 3,810, the gMLP-base
        # masked LM 210,473 against 204,909 tokens/s. TensorFlow's and
        # PyTorch's GPUs keep Keras' formulas, not measured there.
        return True
    if name == "gelu":
        # TensorFlow for export on every device (see `gelu`).
        return backend == "tensorflow"
    if name == "layer_norm":
        return False
    if name == "rank2_dense":
        # See `keras_gmlp.layers._ops.dense_on_last_axis`.
        return backend != "torch"
    # The spatial projection.
    return _choice != "accelerator" and (_xla_on_cpu() or _torch_on_cpu())


# Measured on TensorFlow CPUs: the gMLP-S training step (batch 8, interleaved
# A/B in one process) took 0.87x the time with XLA; see benchmarks/docs/throughput.md.
# Keras' "auto" turns XLA off on TensorFlow when there is no accelerator, so
# the image models (builders and tasks) ask for it there; everywhere else
# they keep "auto".
def default_jit_compile(model):
    """The `jit_compile` the image models' `compile` takes for "auto".

    Under a multi-replica `tf.distribute` strategy it stays "auto", which
    Keras resolves to no XLA: a step compiled by XLA cannot read mirrored
    variables placed on other devices.
    """
    if _choice == "plain" or keras.backend.backend() != "tensorflow":
        return "auto"
    if model.distribute_strategy.num_replicas_in_sync > 1:
        return "auto"
    return True if _xla_on_cpu() else "auto"


@functools.cache
def _xla_on_cpu():
    """Whether this is an XLA backend (TensorFlow, JAX) running on CPUs.

    The fast forms below were timed on a 2-core CPU; on TensorFlow's
    accelerators the layers keep Keras' formulas, never measured against
    them there.
    """
    if keras.backend.backend() not in ("jax", "tensorflow"):
        return False
    devices = keras.distribution.list_devices()
    return all(device.lower().startswith("cpu") for device in devices)


@functools.cache
def _torch_on_cpu():
    """Whether this is the PyTorch backend placing its tensors on the CPU:
    with no CUDA or MPS device, as Keras chooses its default device. Not
    read from a new tensor, whose device a tracing context (a fake or meta
    tensor mode) can change while this is cached."""
    if keras.backend.backend() != "torch":
        return False
    import torch

    return not (torch.cuda.is_available() or torch.backends.mps.is_available())


# Fast on JAX CPUs: one gMLP-S gradient step (batch 8, 2 cores, interleaved
# A/B) took 2.74 s instead of 2.93 s. JAX's exact GELU goes through `erfc`,
# which XLA's CPU backend expands into a long polynomial and recomputes in
# several backward fusions; `erf` is one native op. TensorFlow takes it on
# every device for a reason other than speed: its own exact GELU uses
# `erfc`, which ONNX has no operator for, so an exported model would not
# load. PyTorch's plain form is already one fused kernel of this formula.
def gelu(x):
    """Exact GELU, `0.5 * x * (1 + erf(x / sqrt(2)))`, as timm and PyTorch use."""
    if uses_fast_form("gelu"):
        return 0.5 * x * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))
    return keras.activations.gelu(x, approximate=False)


# Fast on JAX CPUs: with this form and the erf GELU, the gMLP-S gradient
# step above took 2.48 s instead of 2.93 s (2.74 s with the GELU alone).
# Keras' formula folds `gamma` into the inverse standard deviation, an
# input-sized product that the backward pass reads again (0.11 s of the
# step in a profile). TensorFlow gained nothing from it (2.26 s against
# 2.05-2.22 s), and PyTorch's plain form is its fused kernel.
def layer_normalization(layer, inputs):
    """`layer(inputs)` for a `keras.layers.LayerNormalization` over the last axis.

    The fast form computes `(x - mean) * rsqrt(var + epsilon) * gamma +
    beta` in at least float32, as Keras does, so half precision stays
    stable; RMS scaling always takes Keras' formula.
    """
    if layer.rms_scaling or not uses_fast_form("layer_norm"):
        return keras.layers.LayerNormalization.call(layer, inputs)
    compute_dtype = keras.backend.result_type(inputs.dtype, "float32")
    x = ops.cast(inputs, compute_dtype)
    mean = ops.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
    outputs = centered * ops.rsqrt(variance + layer.epsilon)
    if layer.scale:
        outputs = outputs * ops.cast(layer.gamma, compute_dtype)
    if layer.center:
        outputs = outputs + ops.cast(layer.beta, compute_dtype)
    return ops.cast(outputs, layer.compute_dtype)


# Fast on XLA CPUs: 8 gMLP-S blocks, batch 8, training step (interleaved
# A/B): JAX 1.40 s -> 1.27 s, TensorFlow 1.20 s -> 1.07 s. XLA's CPU backend
# runs one (tokens, tokens) x (tokens, batch * channels) matmul faster than
# the batched contraction the einsum lowers to. With one head the fast form
# is a matmul batched over the samples, each `W @ context[b]`: its operands
# and result keep the activations' layout, so XLA transposes no activation
# in the forward pass (a gMLP-S/16 block's training step: 5 transposes
# instead of 14, 232 ms instead of 255 ms; benchmarks/docs/hlo_census.md
# and throughput.md).
# Eager PyTorch on CPUs runs the one-head form too (a gMLP-S-sized
# projection's forward and backward: 18.3 ms instead of 20.9 ms with the
# einsum); with several heads it keeps the einsum, one `bmm`, since the
# tokens-first transposes made its step 1.06x slower.
def spatial_projection(kernel, bias, context, batch, rows, columns):
    """`sum_n kernel[h, m, n] * context[b, n, h, c] + bias[h, m]`, the SGU's
    token mixing.

    The sizes come from the caller's one `ops.shape` call: on TensorFlow
    each call adds a slice per unknown dimension, and unused slices become
    extra outputs of an OpenVINO export.

    Args:
        kernel: `(heads, rows, columns)`, each head's spatial weights.
        bias: `(heads, rows)`, each head's bias per output token.
        context: `(batch, columns, heads * head_dim)`, the normalised gates,
            head by head along the last axis.
        batch: int or scalar tensor, the batch size.
        rows: int or scalar tensor, the number of output tokens.
        columns: int or scalar tensor, the number of context tokens.

    Returns:
        A tensor `(batch, rows, heads * head_dim)`.
    """
    heads = kernel.shape[0]
    fast = uses_fast_form("spatial_projection")
    if heads == 1:
        # `(1, rows)` to `(rows, 1)`, which broadcasts over the samples.
        bias = ops.reshape(bias, (-1, 1))
        if fast:
            kernel = ops.broadcast_to(kernel, (batch, rows, columns))
            return ops.matmul(kernel, context) + bias
        return ops.einsum("mn,bnc->bmc", kernel[0], context) + bias
    head_dim = context.shape[-1] // heads
    context = ops.reshape(context, (batch, columns, heads, head_dim))
    if fast and keras.backend.backend() != "torch":
        tokens_first = ops.reshape(
            ops.transpose(context, (2, 1, 0, 3)), (heads, columns, -1)
        )
        projected = ops.reshape(
            ops.matmul(kernel, tokens_first), (heads, rows, batch, head_dim)
        )
        projected = ops.transpose(projected, (2, 1, 0, 3))
    else:
        projected = ops.einsum("hmn,bnhc->bmhc", kernel, context)
    projected = projected + ops.transpose(bias)[:, :, None]
    return ops.reshape(projected, (batch, rows, heads * head_dim))
