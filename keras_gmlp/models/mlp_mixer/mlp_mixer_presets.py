"""MLP-Mixer presets, one per variant of `MLP_MIXER_VARIANTS`.

Each entry is named after timm's architecture and built by
`variant_preset`, whose module says what its fields hold.
"""

from keras_gmlp.models._variant_preset import variant_preset
from keras_gmlp.utils.variants import MLP_MIXER_VARIANTS

backbone_presets = {
    variant["timm_name"]: variant_preset(
        variant,
        "mlp_mixer",
        "Google's ImageNet-21k weights fine-tuned on ImageNet-1k",
        tokens_mlp_dim=variant["tokens_mlp_dim"],
        channels_mlp_dim=variant["channels_mlp_dim"],
    )
    for variant in MLP_MIXER_VARIANTS.values()
}
