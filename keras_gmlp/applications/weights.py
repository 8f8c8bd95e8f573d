"""The weights of the image classifiers: public ImageNet checkpoints and
timm conversion.

`IMAGENET_WEIGHTS` lists the variants with public ImageNet weights (from
the variant tables in `keras_gmlp.utils.variants`);
`fetch_imagenet_weights` downloads and verifies them. The conversion itself
lives in `keras_gmlp.utils.timm` and is re-exported here, where the
builders' users find it.
"""

from keras_gmlp.utils.timm.checkpoint import TIMM_SUFFIXES
from keras_gmlp.utils.timm.checkpoint import read_checkpoint
from keras_gmlp.utils.timm.download import fetch_pinned_checkpoint
from keras_gmlp.utils.timm.download import pinned_origin
from keras_gmlp.utils.timm.state_dict import load_timm_weights
from keras_gmlp.utils.timm.state_dict import timm_state_dict
from keras_gmlp.utils.variants import IMAGE_CLASSIFIER_VARIANTS

__all__ = [
    "IMAGENET_WEIGHTS",
    "TIMM_SUFFIXES",
    "fetch_imagenet_weights",
    "imagenet_weights_origin",
    "load_timm_weights",
    "read_checkpoint",
    "timm_state_dict",
]

# {variant: {"repository", "revision", "sha256", "release"}}.
IMAGENET_WEIGHTS = {
    name: variant["imagenet"]
    for name, variant in IMAGE_CLASSIFIER_VARIANTS.items()
    if variant["imagenet"] is not None
}


def imagenet_weights_origin(variant):
    """The pinned download URL of `variant`'s ImageNet weights, or None if
    its revision is not recorded."""
    return pinned_origin(IMAGENET_WEIGHTS[variant])


def fetch_imagenet_weights(variant):
    """Path of the cached timm ImageNet checkpoint of `variant`.

    Downloaded once with `keras.utils.get_file` into `$KERAS_HOME/models`
    (default `~/.keras/models`); a cached file is used without network
    access. Where `IMAGENET_WEIGHTS` records the hub repository's revision
    and sha256, the file is that revision's `model.safetensors`, checked
    against the sha256 at every use. Otherwise (no variant has them yet) a
    `model.safetensors` the user saved in the cache under the repository's
    name is used, and failing that timm's original release checkpoint
    (`.pth`, read with torch) is downloaded and only the 8-digit sha256
    prefix in its name is checked; either file's size and sha256 are
    stamped at its first use and checked at every later use. Hashing needs
    no torch. A download that fails its check is deleted, a cached file
    that changed is refused, and no weights are loaded.

    Args:
        variant: a key of `IMAGENET_WEIGHTS`, e.g. `"gmlp_s16"`.

    Returns:
        The local path of the checkpoint.

    Examples:

    ```python
    path = fetch_imagenet_weights("gmlp_s16")
    ```
    """
    return fetch_pinned_checkpoint(variant, IMAGENET_WEIGHTS[variant])
