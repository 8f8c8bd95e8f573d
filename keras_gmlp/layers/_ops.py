"""Small tensor helpers shared by the blocks."""

from keras import ops

from keras_gmlp.layers._kernels import uses_fast_form


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
        return dense(x)
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
    """
    if training and dropout_layer.rate > 0:
        x = dropout_layer(x, training=training)
    if training and drop_path.rate > 0:
        x = drop_path(x, training=training)
    return x
