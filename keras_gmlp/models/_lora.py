"""LoRA targets for the backbones: keras-hub's default names (attention's
`query` and `value`) name no layer of an MLP, and its `enable_lora` then
freezes every weight and adapts nothing."""

from keras_gmlp.layers._lora import check_lora_targets


class LoraTargets:
    """Mixin for a keras-hub `Backbone`: `default_lora_layer_names()` from
    the class's `LORA_LAYER_NAMES`, and an `enable_lora` that refuses, before
    freezing anything, target names that match no layer LoRA can adapt."""

    LORA_LAYER_NAMES = ()

    def default_lora_layer_names(self):
        return list(self.LORA_LAYER_NAMES)

    def enable_lora(self, rank, target_layer_names=None):
        names = (
            self.default_lora_layer_names()
            if target_layer_names is None
            else list(target_layer_names)
        )
        check_lora_targets(self, rank, names, target_layer_names)
        super().enable_lora(rank, target_layer_names=names)
