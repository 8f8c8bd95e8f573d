"""LoRA targets for the backbones: keras-hub's default names (attention's
`query` and `value`) name no layer of an MLP, and its `enable_lora` then
freezes every weight and adapts nothing. And only the factors train:
keras-hub leaves an adapted `Dense`'s bias trainable, but
`save_lora_weights` stores the factors alone, so a fitted adapter saved and
loaded again computed something else."""

from keras_gmlp.layers._lora import check_lora_targets


class LoraTargets:
    """Mixin for a keras-hub `Backbone`: `default_lora_layer_names()` from
    the class's `LORA_LAYER_NAMES`, and an `enable_lora` that refuses, before
    freezing anything, target names that match no layer LoRA can adapt, and
    leaves only the LoRA factors trainable (the adapted layers' biases
    frozen too, as in LoRA and QLoRA), so that `save_lora_weights` holds
    everything a fit changed. On an int8-quantized backbone the factors
    are float beside the int8 kernels (QLoRA's recipe)."""

    LORA_LAYER_NAMES = ()

    def default_lora_layer_names(self):
        return list(self.LORA_LAYER_NAMES)

    def enable_lora(self, rank, target_layer_names=None):
        names = (
            self.default_lora_layer_names()
            if target_layer_names is None
            else list(target_layer_names)
        )
        targets = check_lora_targets(self, rank, names, target_layer_names)
        super().enable_lora(rank, target_layer_names=names)
        for layer in targets:
            if getattr(layer, "bias", None) is not None:
                layer.bias.trainable = False
