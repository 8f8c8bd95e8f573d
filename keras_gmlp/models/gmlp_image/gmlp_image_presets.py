"""gMLP image presets, one per variant of `GMLP_IMAGE_VARIANTS`.

Each entry is named after timm's architecture and built by
`variant_preset`, whose module says what its fields hold.
"""

from keras_gmlp.models._variant_preset import variant_preset
from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS

backbone_presets = {
    variant["timm_name"]: variant_preset(
        variant,
        "gmlp_image",
        "timm's ImageNet-1k weights",
        intermediate_dim=variant["intermediate_dim"],
    )
    for variant in GMLP_IMAGE_VARIANTS.values()
}
