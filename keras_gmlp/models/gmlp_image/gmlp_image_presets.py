"""gMLP image presets, one per variant of `GMLP_IMAGE_VARIANTS`.

Each entry is named after timm's architecture; `config` holds the backbone
arguments, `params` timm's parameter count with the 1000-class head, and
`timm_handle` (with `timm_revision`) the Hugging Face repository of the
public ImageNet weights, or `None` where there are none (then
`from_preset(name, load_weights=False)` builds the architecture with random
weights).
"""

from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS
from keras_gmlp.models._variant_preset import variant_preset

backbone_presets = {
    variant["timm_name"]: variant_preset(
        variant,
        "gmlp_image",
        "timm's ImageNet-1k weights",
        intermediate_dim=variant["intermediate_dim"],
    )
    for variant in GMLP_IMAGE_VARIANTS.values()
}
