"""gMLP image presets: timm's configurations (Liu et al., 2021, Table 1).

Each entry names a timm architecture; `config` holds the backbone
arguments, `params` timm's parameter count with the 1000-class head, and
`timm_handle` the Hugging Face repository of public ImageNet weights, or
`None` where there are none (then `from_preset(name, load_weights=False)`
builds the architecture with random weights).
"""


def _gmlp(description, hidden_dim, params, timm_handle=None):
    return {
        "metadata": {
            "description": description,
            "params": params,
            "path": "gmlp_image",
        },
        "config": {
            "patch_size": 16,
            "num_layers": 30,
            "hidden_dim": hidden_dim,
            "intermediate_dim": 6 * hidden_dim,
            "image_shape": (224, 224, 3),
        },
        "timm_handle": timm_handle,
    }


backbone_presets = {
    "gmlp_ti16_224": _gmlp(
        "gMLP-Ti/16 at 224x224: 30 blocks, width 128. No public weights.",
        128, 5_867_328,
    ),
    "gmlp_s16_224": _gmlp(
        "gMLP-S/16 at 224x224: 30 blocks, width 256. timm's ImageNet-1k "
        "weights (ra3_in1k).",
        256, 19_422_656, "hf://timm/gmlp_s16_224.ra3_in1k",
    ),
    "gmlp_b16_224": _gmlp(
        "gMLP-B/16 at 224x224: 30 blocks, width 512. No public weights.",
        512, 73_075_392,
    ),
}
