"""Small tensor helpers shared by the blocks."""

import functools
import math

import keras
from keras import ops


@functools.cache
def xla_on_cpu():
    """Whether this is an XLA backend (TensorFlow, JAX) running on CPUs.

    The alternative formulas that use it were chosen from timings on a
    2-core CPU; on accelerators the layers keep Keras' formulas.
    """
    if keras.backend.backend() not in ("jax", "tensorflow"):
        return False
    devices = keras.distribution.list_devices()
    return all(device.lower().startswith("cpu") for device in devices)


def dense_on_last_axis(dense, x):
    """Applies `dense` to the last axis of a rank-3 `x` as one rank-2 matmul.

    The result equals `dense(x)`; XLA's CPU backend runs the rank-2 form's
    backward pass about twice as fast as the batched rank-3 one. It is used
    on every device: reshaping a contiguous tensor costs nothing anywhere,
    and `Dense` runs the same matmul either way.
    """
    # One `ops.shape` call: on TensorFlow each call adds a slice per unknown
    # dimension, and unused slices become extra outputs of an OpenVINO export.
    batch, length = ops.shape(x)[:2]
    y = dense(ops.reshape(x, (-1, x.shape[-1])))
    return ops.reshape(y, (batch, length, y.shape[-1]))


def gelu(x):
    """Exact GELU, `0.5 * x * (1 + erf(x / sqrt(2)))`, as timm and PyTorch use.

    JAX's own exact GELU goes through `erfc`, which XLA's CPU backend expands
    into a long piecewise polynomial and then recomputes inside several
    fusions of the backward pass; the `erf` form is one native op and cut a
    gMLP-S gradient step from 2.93 s to 2.74 s (interleaved A/B, 2 cores).
    TensorFlow's own exact GELU uses `erfc`, which ONNX has no operator for,
    so a TensorFlow model exported to ONNX would not load; it takes the `erf`
    form on every device. JAX takes it on CPUs only, where it was measured.
    PyTorch computes this formula in one fused kernel and keeps Keras'.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow" or (backend == "jax" and xla_on_cpu()):
        return 0.5 * x * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))
    return keras.activations.gelu(x, approximate=False)


def drop_branch(dropout_layer, drop_path, x, training):
    """Dropout, then stochastic depth, on a residual branch `x`.

    Both are identities outside training and at rate 0, which is how every
    model runs at inference; their calls are skipped then. Each skipped call
    saves Keras' per-layer overhead, about 0.2 ms in eager PyTorch, which
    is a few percent of a thin model's step (gMLP-Ti has 60 such calls).
    """
    if training and dropout_layer.rate > 0:
        x = dropout_layer(x, training=training)
    if training and drop_path.rate > 0:
        x = drop_path(x, training=training)
    return x
