"""What Keras' exports on the PyTorch backend need from this library's models;
imported only on that backend.

Two things stop `torch.onnx` (and any other `torch.jit` trace) on these
models, both fixed here through public APIs for the duration of one export:

- keras-hub's `Backbone` and `Task` set attributes with `object.__setattr__`
  on PyTorch while they are built, so their `torch_params` (Keras' dict of
  the model's variables as torch parameters) is not a registered submodule
  and `model.parameters()` is empty. The tracer then meets the weights as
  unknown tensors: "Cannot insert a Tensor that requires grad as a
  constant" (first in `keras.layers.ReversibleEmbedding`, the first layer).
- With a free batch size Keras exports through TorchScript, whose tracer
  records `x.shape[-1]` as a traced value; Keras' LayerNormalization passes
  it to `F.layer_norm` as `normalized_shape`, and torch's ONNX function for
  `aten::layer_norm` needs constants ("Failed to export a node ... because
  it is not constant"). Only the number of normalised axes matters to ONNX's
  LayerNormalization, so the function registered here reads that instead.

And one more stops the masked LM: keras-hub's `MaskedLMHead` gathers the
masked positions with `ops.take_along_axis`, which Keras runs as
`torch.take_along_dim`, and torch has no ONNX function for it ("Exporting
the operator 'aten::take_along_dim' ... is not supported"). The one
registered here is ONNX's GatherElements after torch's broadcasting.
"""

import contextlib

import torch

# The module name under which `torch_params` is registered during an export.
PARAMETERS_NAME = "keras_gmlp_export_parameters"


@contextlib.contextmanager
def torch_exportable(model):
    """Within the block, `model`'s variables are its torch parameters and
    torch's ONNX exporter converts the operators of `ONNX_FUNCTIONS` with
    the functions below.

    Args:
        model: a `keras.Model` on the PyTorch backend.
    """
    registered = PARAMETERS_NAME not in dict(model.named_children())
    if registered:
        torch.nn.Module.register_module(model, PARAMETERS_NAME, model.torch_params)
    for name, (function, opset) in ONNX_FUNCTIONS.items():
        torch.onnx.register_custom_op_symbolic(name, function, opset)
    try:
        yield
    finally:
        for name, (_, opset) in ONNX_FUNCTIONS.items():
            torch.onnx.unregister_custom_op_symbolic(name, opset)
        if registered:
            delattr(model, PARAMETERS_NAME)


@torch.onnx.symbolic_helper.parse_args("v", "v", "v", "v", "f", "none")
def _layer_norm(g, inputs, normalized_shape, weight, bias, eps, cudnn_enable):
    """ONNX LayerNormalization over the last `len(normalized_shape)` axes,
    whether the sizes in `normalized_shape` are constants or traced."""
    node = normalized_shape.node()
    if node.kind() == "prim::ListConstruct":
        rank = len(list(node.inputs()))
    else:  # A constant list.
        rank = len(node.t("value"))
    if weight.node().mustBeNone():
        weight = _filled_like_normalized(g, inputs, rank, 1.0)
    if bias.node().mustBeNone():
        bias = _filled_like_normalized(g, inputs, rank, 0.0)
    return g.op("LayerNormalization", inputs, weight, bias, epsilon_f=eps, axis_i=-rank)


def _filled_like_normalized(g, inputs, rank, value):
    """A tensor of `value` in `inputs`' dtype, shaped as its last `rank` axes
    (the default scale or offset of a layer norm without one)."""
    shape = g.op("Shape", inputs, start_i=-rank)
    filled = g.op("Expand", g.op("Constant", value_t=torch.tensor(value)), shape)
    return g.op("CastLike", filled, inputs)


@torch.onnx.symbolic_helper.parse_args("v", "v", "i")
def _take_along_dim(g, inputs, indices, dim):
    """ONNX GatherElements along `dim`, after broadcasting `inputs` and
    `indices` against each other on every other axis, as torch does."""
    rank = inputs.type().dim()
    axis = dim % rank
    is_axis = g.op("Constant", value_t=torch.arange(rank) == axis)
    inputs_shape = g.op("Shape", inputs)
    indices_shape = g.op("Shape", indices)
    common = g.op("Max", inputs_shape, indices_shape)
    inputs = g.op("Expand", inputs, g.op("Where", is_axis, inputs_shape, common))
    indices = g.op("Expand", indices, g.op("Where", is_axis, indices_shape, common))
    return g.op("GatherElements", inputs, indices, axis_i=axis)


# The ONNX functions registered during an export: torch operator -> (function,
# the lowest opset it serves; torch dispatches every later opset to it).
# ONNX's LayerNormalization and `Shape`'s `start` exist from opset 17 and 15,
# and `Max` of int64 shapes from opset 12.
ONNX_FUNCTIONS = {
    "aten::layer_norm": (_layer_norm, 17),
    "aten::take_along_dim": (_take_along_dim, 12),
}
