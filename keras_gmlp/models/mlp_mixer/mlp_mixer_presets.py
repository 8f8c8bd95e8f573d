"""MLP-Mixer presets: timm's configurations (Tolstikhin et al., 2021, Table 1).

Each entry names a timm architecture; `config` holds the backbone
arguments, `params` timm's parameter count with the 1000-class head, and
`timm_handle` the Hugging Face repository of public ImageNet weights, or
`None` where there are none (then `from_preset(name, load_weights=False)`
builds the architecture with random weights).
"""


def _mixer(size, num_layers, hidden_dim, patch_size, params, timm_handle=None):
    weights = (
        f"Google's ImageNet-21k weights fine-tuned on ImageNet-1k "
        f"({timm_handle.rsplit('.', 1)[-1]})."
        if timm_handle else "No public weights."
    )
    return {
        "metadata": {
            "description": (
                f"Mixer-{size}/{patch_size} at 224x224: {num_layers} blocks, "
                f"width {hidden_dim}. {weights}"
            ),
            "params": params,
            "path": "mlp_mixer",
        },
        "config": {
            "patch_size": patch_size,
            "num_layers": num_layers,
            "hidden_dim": hidden_dim,
            # timm's mlp_ratio=(0.5, 4.0).
            "tokens_mlp_dim": hidden_dim // 2,
            "channels_mlp_dim": 4 * hidden_dim,
            "image_shape": (224, 224, 3),
        },
        "timm_handle": timm_handle,
    }


backbone_presets = {
    "mixer_s32_224": _mixer("S", 8, 512, 32, 19_104_624),
    "mixer_s16_224": _mixer("S", 8, 512, 16, 18_528_264),
    "mixer_b32_224": _mixer("B", 12, 768, 32, 60_293_428),
    "mixer_b16_224": _mixer(
        "B", 12, 768, 16, 59_880_472, "hf://timm/mixer_b16_224.goog_in21k_ft_in1k"
    ),
    "mixer_l32_224": _mixer("L", 24, 1024, 32, 206_939_264),
    "mixer_l16_224": _mixer(
        "L", 24, 1024, 16, 208_196_168, "hf://timm/mixer_l16_224.goog_in21k_ft_in1k"
    ),
}
