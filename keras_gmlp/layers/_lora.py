"""Which layers LoRA adapts, and the checks made before anything is frozen.

Shared by the keras-hub backbones' `enable_lora` (keras_gmlp.models) and
`keras_gmlp.applications.enable_lora` for the builders' functional models:
the blocks name their channel projections (`CHANNEL_PROJECTIONS`, a class
attribute of `gMLPBlock`, `TinyAttention` and `MixerBlock`), and a target
name that matches no layer LoRA can adapt is refused, as are a rank that is
not a positive int and a layer that already has LoRA, before a weight is
frozen.
"""

from keras_gmlp.layers._sublayers import nested_sublayers
from keras_gmlp.layers._validation import check_positive_int


def channel_projections(*layer_classes):
    """The `CHANNEL_PROJECTIONS` of `layer_classes`, in order, each once."""
    names = (name for cls in layer_classes for name in cls.CHANNEL_PROJECTIONS)
    return tuple(dict.fromkeys(names))


def block_channel_projections(model):
    """The channel projections of the blocks found inside `model`."""
    classes = (
        type(layer)
        for layer in nested_sublayers(model)
        if hasattr(type(layer), "CHANNEL_PROJECTIONS")
    )
    return channel_projections(*dict.fromkeys(classes))


def adaptable_layers(model):
    """The layers inside `model` that LoRA can adapt: those with weights and
    an `enable_lora` method (Dense, EinsumDense, Embedding, ...)."""
    return [
        layer
        for layer in nested_sublayers(model)
        if layer.weights and hasattr(layer, "enable_lora")
    ]


def check_lora_targets(model, rank, names, target_layer_names):
    """Raises ValueError, changing nothing, unless `rank` is a positive int
    and some layer LoRA can adapt is named in `names` (the targets;
    `target_layer_names` is what the caller received) and none of those
    already has LoRA. Returns the matching layers."""
    check_positive_int("rank", rank)
    adaptable = adaptable_layers(model)
    matching = [layer for layer in adaptable if layer.name in names]
    if not matching:
        raise ValueError(
            f"`enable_lora` found no layer of this {type(model).__name__} "
            f"named {list(names)}. Received: "
            f"target_layer_names={target_layer_names!r}; the layers LoRA can "
            f"adapt are named {sorted({layer.name for layer in adaptable})}"
        )
    enabled = sorted(
        {layer.name for layer in matching if getattr(layer, "lora_enabled", False)}
    )
    if enabled:
        raise ValueError(
            f"LoRA is already enabled on the layers named {enabled} of this "
            f"{type(model).__name__}; it can be enabled once. Received: "
            f"rank={rank}, target_layer_names={target_layer_names!r}"
        )
    return matching
