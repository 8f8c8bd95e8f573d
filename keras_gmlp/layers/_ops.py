"""Small tensor helpers shared by the blocks."""

import keras
from keras import ops

from keras_gmlp import _compat
from keras_gmlp.layers._kernels import uses_fast_form


def call_sublayer(layer, inputs, **kwargs):
    """`layer(inputs, **kwargs)`, for a sublayer (`Dense`,
    `LayerNormalization`, `Dropout`, `StochasticDepth`, the spatial gating
    unit, tiny attention) called from the `call` of the block that holds it.

    On PyTorch, where Keras' `Layer.__call__` runs as Python on every call
    (about 75 us on a 2-core CPU, more than a thin layer's arithmetic; in
    eager mode the GPU waits for it), `layer.call` runs directly wherever
    `__call__` would add nothing to it: the layer is built, neither
    quantized nor made in a `keras.RematScope` (both are applied by
    `__call__`), the autocast scope open now is the one its `__call__`
    would open (so it reads its variables in the same dtype), and `inputs`
    are in its compute dtype already. Anything else (the float32 norm of a
    mixed-precision SGU, an int8 `Dense`) takes `__call__`. On eager
    PyTorch CPUs this cut a 30-block thin gMLP's training step by 5-18%;
    `benchmarks/docs/throughput.md`.
    """
    if (
        keras.backend.backend() == "torch"
        and layer.built
        and layer.quantization_mode is None
        and not _compat.rematerializes(layer)
        and _reads_variables_as_call_would(layer)
        and keras.backend.standardize_dtype(inputs.dtype) == layer.compute_dtype
    ):
        return layer.call(inputs, **kwargs)
    return layer(inputs, **kwargs)


def _reads_variables_as_call_would(layer):
    """Whether the autocast scope open now is the one `layer.__call__`
    would open (or keep) for its `call`."""
    scope = _compat.autocast_dtype()
    if scope is None:
        return layer.compute_dtype == layer.variable_dtype
    return layer.autocast and scope == layer.compute_dtype


def dense_on_last_axis(dense, x):
    """Applies `dense` to the last axis of a rank-3 `x` as one rank-2 matmul.

    The result equals `dense(x)`; XLA's CPU backend runs the rank-2 form's
    backward pass about twice as fast as the batched rank-3 one. It is the
    fast form of the kernel `"rank2_dense"`, taken by TensorFlow and JAX on
    every device: reshaping a contiguous tensor costs XLA nothing, and
    `Dense` runs the same matmul either way. PyTorch takes the plain form,
    `dense(x)`: `torch.matmul` folds a contiguous rank-3 input into the
    same rank-2 product itself, and eager mode would pay for the two
    reshapes as Keras op calls (about 50 us a projection on a 2-core CPU).
    JAX exports take the plain form too: jax2onnx cannot reshape to the
    merged `batch * length` axis of a free batch size.
    """
    if not uses_fast_form("rank2_dense"):
        return call_sublayer(dense, x)
    # One `ops.shape` call: on TensorFlow each call adds a slice per unknown
    # dimension, and unused slices become extra outputs of an OpenVINO export.
    batch, length = ops.shape(x)[:2]
    y = dense(ops.reshape(x, (-1, x.shape[-1])))
    return ops.reshape(y, (batch, length, y.shape[-1]))


def drop_branch(dropout_layer, drop_path, x, training):
    """Dropout, then stochastic depth, on a residual branch `x`.

    Both are identities outside training and at rate 0, which is how every
    model runs at inference; their calls are skipped then. Each skipped call
    saves Keras' per-layer overhead, about 0.2 ms in eager PyTorch, which
    is a few percent of a thin model's step (gMLP-Ti has 60 such calls).
    In training they go through `call_sublayer`, as the block's other
    sublayers do.
    """
    if training and dropout_layer.rate > 0:
        x = call_sublayer(dropout_layer, x, training=training)
    if training and drop_path.rate > 0:
        x = call_sublayer(drop_path, x, training=training)
    return x
