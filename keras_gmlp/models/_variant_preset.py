"""The keras-hub preset entry of an image variant, from its table row.

The gMLP image and MLP-Mixer preset tables hold one entry per variant,
named after timm's architecture: `config` holds the backbone arguments,
`params` timm's parameter count with the 1000-class head, and
`timm_handle` (with `timm_revision`) the Hugging Face repository of the
public ImageNet weights, or `None` where there are none (then
`from_preset(name, load_weights=False)` builds the architecture with random
weights).
"""


def variant_preset(variant, path, weights_source, **block_config):
    """The keras-hub preset entry of a variant.

    Args:
        variant: a row of `GMLP_IMAGE_VARIANTS` or `MLP_MIXER_VARIANTS`.
        path: the family's preset path (`"gmlp_image"`, `"mlp_mixer"`).
        weights_source: what the public weights are, for the description.
        **block_config: the family's block widths.

    Returns:
        A dict with `metadata`, the backbone `config`, and `timm_handle`
        and `timm_revision` of the public weights (`None` without them).
    """
    imagenet = variant["imagenet"]
    weights = (
        f"{weights_source} ({imagenet['repository'].rsplit('.', 1)[-1]})."
        if imagenet
        else "No public weights."
    )
    size = variant["default_size"]
    return {
        "metadata": {
            "description": (
                f"{variant['title']} at {size}x{size}: "
                f"{variant['num_blocks']} blocks, width "
                f"{variant['hidden_dim']}. {weights}"
            ),
            "params": variant["params"],
            "path": path,
        },
        "config": {
            "patch_size": variant["patch_size"],
            "num_layers": variant["num_blocks"],
            "hidden_dim": variant["hidden_dim"],
            **block_config,
            "image_shape": (size, size, 3),
        },
        "timm_handle": f"hf://{imagenet['repository']}" if imagenet else None,
        "timm_revision": imagenet["revision"] if imagenet else None,
    }
