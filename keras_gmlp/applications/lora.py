"""LoRA for the builders' functional models, as keras-hub's
`Backbone.enable_lora` does it for the backbones."""

from keras_gmlp.layers._lora import block_channel_projections
from keras_gmlp.layers._lora import check_lora_targets
from keras_gmlp.layers._sublayers import nested_sublayers

HEAD = "predictions"


def enable_lora(model, rank, target_layer_names=None):
    """Freezes `model` but for LoRA factors on its channel projections and
    its classifier head.

    The functional models of the image builders (`gMLPS`, `MixerB16`, ...,
    or any `keras.Model` made of their blocks) have no `enable_lora` of
    their own: this is keras-hub's `Backbone.enable_lora` for them. Every
    layer is frozen; each `Dense` (or other layer with `enable_lora`) named
    in `target_layer_names` gets trainable low-rank factors of `rank` beside
    its frozen kernel (Keras' `Dense.enable_lora`), its bias still training
    as Keras leaves it; the head (the layer named `"predictions"`, if any)
    stays trainable. Nothing changes when the arguments are refused.

    Saving (`model.save`, `save_weights`) stores each adapted kernel merged
    with its factors, as Keras does, so the saved model needs no LoRA to
    load.

    Args:
        model: a `keras.Model` built by `keras_gmlp.applications` (or one
            holding its blocks).
        rank: positive int, the rank of the LoRA factors.
        target_layer_names: optional list of the names of the layers to
            adapt. Defaults to the channel projections of the blocks found
            in `model` (`gMLPBlock.CHANNEL_PROJECTIONS`,
            `TinyAttention.CHANNEL_PROJECTIONS`,
            `MixerBlock.CHANNEL_PROJECTIONS`): `["expand", "output"]` for
            gMLP, `["channel_expand", "channel_output"]` for MLP-Mixer.

    Raises:
        ValueError: if `rank` is not a positive int, if no layer LoRA can
            adapt is named in `target_layer_names` (the message lists the
            names tried and those available), or if a named layer already
            has LoRA.

    Examples:

    ```python
    model = keras_gmlp.applications.gMLPS(weights="imagenet", classes=1000)
    keras_gmlp.applications.enable_lora(model, rank=4)
    model.compile(optimizer="adamw", loss="sparse_categorical_crossentropy")
    model.fit(images, labels)  # trains the factors, biases and head

    mixer = keras_gmlp.applications.MixerB16(weights="imagenet")
    keras_gmlp.applications.enable_lora(
        mixer, rank=8, target_layer_names=["channel_expand"]
    )
    ```
    """
    names = (
        list(block_channel_projections(model))
        if target_layer_names is None
        else list(target_layer_names)
    )
    targets = check_lora_targets(model, rank, names, target_layer_names)
    # keras-hub's order: the model trainable (a frozen model has no
    # trainable weights at all), every layer in it frozen, then the head and
    # the targets trainable again; `Dense.enable_lora` freezes the kernel.
    model.trainable = True
    layers = nested_sublayers(model)
    for layer in layers:
        layer.trainable = False
    for layer in layers:
        if layer.name == HEAD:
            layer.trainable = True
    for layer in targets:
        layer.trainable = True
        layer.enable_lora(rank)
