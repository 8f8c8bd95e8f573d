"""LoRA targets for the backbones: keras-hub's default names (attention's
`query` and `value`) name no layer of an MLP, and its `enable_lora` then
freezes every weight and adapts nothing."""

from keras_gmlp.layers._sublayers import nested_sublayers
from keras_gmlp.layers._validation import check_positive_int


class LoraTargets:
    """Mixin for a keras-hub `Backbone`: `default_lora_layer_names()` from
    the class's `LORA_LAYER_NAMES`, and an `enable_lora` that refuses, before
    freezing anything, target names that match no layer LoRA can adapt."""

    LORA_LAYER_NAMES = ()

    def default_lora_layer_names(self):
        return list(self.LORA_LAYER_NAMES)

    def enable_lora(self, rank, target_layer_names=None):
        check_positive_int("rank", rank)
        names = (
            self.default_lora_layer_names()
            if target_layer_names is None
            else list(target_layer_names)
        )
        adaptable = sorted(
            {
                layer.name
                for layer in nested_sublayers(self)
                if layer.weights and hasattr(layer, "enable_lora")
            }
        )
        if not set(names) & set(adaptable):
            raise ValueError(
                f"`enable_lora` found no layer of this {type(self).__name__} "
                f"named {names}. Received: target_layer_names={target_layer_names!r}; "
                f"the layers LoRA can adapt are named {adaptable}"
            )
        super().enable_lora(rank, target_layer_names=names)
