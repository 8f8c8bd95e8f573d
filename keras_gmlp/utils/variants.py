"""The paper variants of each family, one table per family.

Every fact about a variant is written here once: its depth and widths, patch
size, default image size, the paper's drop-path rate, timm's parameter count
(with the 1000-class head), timm's architecture name and, where they exist,
its public ImageNet weights. The keras.applications builders
(`keras_gmlp.applications.gMLPS`, `MixerB16`, ...), the keras-hub presets
(`gmlp_image_presets`, `mlp_mixer_presets`), `IMAGENET_WEIGHTS`, the tests
and the programs read it.

The tables are plain data below `keras_gmlp.models`, not in the family
folders: the image builders import only keras, and importing anything under
`keras_gmlp.models` loads the keras-hub classes, and with them TensorFlow.

Public weights are pinned two ways (see `keras_gmlp.utils.timm.download`):
the Hugging Face repository at a fixed `revision` with the file's full
`sha256`, and, while those are not recorded (`None`: this code was written
without network access; the hub answers a HEAD request for
`resolve/main/model.safetensors` with the commit in `X-Repo-Commit` and the
sha256 in `X-Linked-Etag`), timm's original `release` file, whose name ends
in the first 8 hex digits of its sha256: only those are checked at
download, then the size and full sha256 stamped at download at every use.
"""

_RELEASES = "https://github.com/rwightman/pytorch-image-models/releases/download"

# Liu et al. 2021, Table 1. The drop-path rates are those of the paper's
# recipe (survival probability 1.0, 0.95 and 0.8 at the last block).
GMLP_IMAGE_VARIANTS = {
    "gmlp_ti16": {
        "builder": "gMLPTi",
        "title": "gMLP-Ti/16",
        "timm_name": "gmlp_ti16_224",
        "num_blocks": 30,
        "hidden_dim": 128,
        "intermediate_dim": 768,
        "patch_size": 16,
        "default_size": 224,
        "paper_drop_path_rate": 0.0,
        "params": 5_867_328,
        "imagenet": None,
    },
    "gmlp_s16": {
        "builder": "gMLPS",
        "title": "gMLP-S/16",
        "timm_name": "gmlp_s16_224",
        "num_blocks": 30,
        "hidden_dim": 256,
        "intermediate_dim": 1536,
        "patch_size": 16,
        "default_size": 224,
        "paper_drop_path_rate": 0.05,
        "params": 19_422_656,
        "imagenet": {
            "repository": "timm/gmlp_s16_224.ra3_in1k",
            "revision": None,  # UNKNOWN: not recorded yet
            "sha256": None,  # UNKNOWN: not recorded yet
            "release": f"{_RELEASES}/v0.1-weights/gmlp_s16_224_raa-10536d42.pth",
        },
    },
    "gmlp_b16": {
        "builder": "gMLPB",
        "title": "gMLP-B/16",
        "timm_name": "gmlp_b16_224",
        "num_blocks": 30,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "patch_size": 16,
        "default_size": 224,
        "paper_drop_path_rate": 0.2,
        "params": 73_075_392,
        "imagenet": None,
    },
}


def _mixer(builder, num_blocks, hidden_dim, patch_size, params, imagenet=None):
    # timm's mlp_ratio=(0.5, 4.0): the paper's D_S and D_C (Table 1).
    size = builder[5]
    return {
        "builder": builder,
        "title": f"Mixer-{size}/{patch_size}",
        "timm_name": f"mixer_{size.lower()}{patch_size}_224",
        "num_blocks": num_blocks,
        "hidden_dim": hidden_dim,
        "tokens_mlp_dim": hidden_dim // 2,
        "channels_mlp_dim": 4 * hidden_dim,
        "patch_size": patch_size,
        "default_size": 224,
        # The paper gives no per-variant rate; the public weights used none.
        "paper_drop_path_rate": None,
        "params": params,
        "imagenet": imagenet,
    }


def _google_weights(name, release):
    return {
        "repository": f"timm/{name}_224.goog_in21k_ft_in1k",
        "revision": None,  # UNKNOWN: not recorded yet
        "sha256": None,  # UNKNOWN: not recorded yet
        "release": f"{_RELEASES}/v0.1-vitjx/{release}",
    }


# Tolstikhin et al. 2021, Table 1.
MLP_MIXER_VARIANTS = {
    "mixer_s32": _mixer("MixerS32", 8, 512, 32, 19_104_624),
    "mixer_s16": _mixer("MixerS16", 8, 512, 16, 18_528_264),
    "mixer_b32": _mixer("MixerB32", 12, 768, 32, 60_293_428),
    "mixer_b16": _mixer(
        "MixerB16",
        12,
        768,
        16,
        59_880_472,
        _google_weights("mixer_b16", "jx_mixer_b16_224-76587d61.pth"),
    ),
    "mixer_l32": _mixer("MixerL32", 24, 1024, 32, 206_939_264),
    "mixer_l16": _mixer(
        "MixerL16",
        24,
        1024,
        16,
        208_196_168,
        _google_weights("mixer_l16", "jx_mixer_l16_224-92f9adc4.pth"),
    ),
}

# Both families by short name (what `train_image_classifier.py --model`
# takes): builder name, patch size, and whether ImageNet weights exist.
IMAGE_CLASSIFIER_VARIANTS = {**GMLP_IMAGE_VARIANTS, **MLP_MIXER_VARIANTS}

# The paper's masked-language-model encoders, one row each.
#
# Liu et al. 2021, Table 4: depth, widths, tiny-attention size and the
# paper's parameter count (BERT's 30,522-token vocabulary, sequences of 128
# tokens, tied output embeddings). `keras_gmlp.applications.gMLPBase` and its
# siblings, the tests and the programs read it; keys are the default model
# names (what `pretrain_mlm.py --model` takes).
GMLP_TEXT_VARIANTS = {
    "gmlp_base": {
        "builder": "gMLPBase",
        "title": "gMLP-base",
        "num_layers": 48,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": None,
        "paper_params": 130_000_000,
    },
    "gmlp_large": {
        "builder": "gMLPLarge",
        "title": "gMLP-large",
        "num_layers": 96,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": None,
        "paper_params": 365_000_000,
    },
    "amlp_base": {
        "builder": "aMLPBase",
        "title": "aMLP-base",
        "num_layers": 36,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": 64,
        "paper_params": 109_000_000,
    },
    "amlp_large": {
        "builder": "aMLPLarge",
        "title": "aMLP-large",
        "num_layers": 72,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": 128,
        "paper_params": 316_000_000,
    },
}

# The arguments of `gMLPBackbone` that a row fixes.
BACKBONE_ARGUMENTS = ("num_layers", "hidden_dim", "intermediate_dim", "attention_dim")
