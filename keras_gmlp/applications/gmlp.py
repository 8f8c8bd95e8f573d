"""gMLP image classifiers (Liu et al., 2021), keras.applications style."""

from keras_gmlp.applications._image_classifier import build_image_classifier
from keras_gmlp.applications._image_classifier import builder_args_doc
from keras_gmlp.layers._patch_mlp import gmlp_block_factory
from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS

# Drop-path rates of the paper's recipe; the builders default to 0.0 like
# keras.applications.
PAPER_DROP_PATH_RATES = {
    name: variant["paper_drop_path_rate"]
    for name, variant in GMLP_IMAGE_VARIANTS.items()
}

BASE_DOCSTRING = """Instantiates the {title} architecture.

    Reference: "Pay Attention to MLPs" (Liu, Dai, So and Le, NeurIPS 2021),
    https://arxiv.org/abs/2105.08050. {params:,} parameters with the
    1000-class top, as timm's `{timm_name}`; {num_blocks} blocks of width
    {hidden_dim} and gated expansion {intermediate_dim}.

    An image classifier (`gMLPTi`, `gMLPS`, `gMLPB`: Tiny, Small, Base at
    patch 16); the masked-language-model text encoders are `gMLPBase` and
    `gMLPLarge`. It builds the layers of `keras_gmlp.models.gMLPImageBackbone`
    (preset `"{timm_name}"`), the keras-hub class to use for `from_preset`,
    `save_to_preset` and `tf.data` preprocessing.

    The model takes raw RGB pixels in `[0, 255]` and scales them to
    `[-1, 1]` inside (timm's normalisation for gMLP) unless
    `include_preprocessing=False`; `preprocess_input` is a pass-through.
    Any input size that the patch size {patch_size} divides works, square or not.
    timm checkpoints trained at another size are loaded with the spatial
    weights resampled to the new patch grid (`load_timm_weights`).

    {builder_args}

    Examples:

    ```python
    model = keras_gmlp.applications.{builder}(weights=None)
    logits = model(keras.random.uniform((1, {default_size}, {default_size}, 3), 0, 255))

    features = keras_gmlp.applications.{builder}(
        include_top=False, input_shape=(256, 192, 3), pooling="avg"
    )
    ```
"""


def gMLP(
    num_blocks,
    hidden_dim,
    intermediate_dim,
    patch_size=16,
    default_size=224,
    variant="gmlp",
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    include_preprocessing=True,
    drop_path_rate=0.0,
    name="gmlp",
    data_format=None,
    gating="split",
):
    """Instantiates a gMLP image classifier of any size.

    `gMLPTi`, `gMLPS` and `gMLPB` call this with the paper's sizes; call it
    directly for other depths, widths or patch sizes (the layout matches
    timm's `MlpMixer` with `SpatialGatingBlock` and `GatedMlp`).

    Args:
        num_blocks: int, number of gMLP blocks.
        hidden_dim: int, token width (d_model).
        intermediate_dim: int, width of the gated expansion (d_ffn).
        patch_size: int, side of the square patches.
        default_size: int, image side used when no input shape is given.
        variant: str, key of the public ImageNet weights, if any.
        include_top, weights, input_tensor, input_shape, pooling, classes,
        classifier_activation, include_preprocessing, drop_path_rate, name,
        data_format: as in `gMLPS`.
        gating: str, the spatial gating unit's form: `"split"` (the paper's
            design, and timm's) or an ablation of the paper's Table 3,
            `"multiplicative"`, `"additive"` or `"linear"`. Only `"split"`
            loads timm's or Keras' ImageNet weights.

    Returns:
        A `keras.Model`.

    Examples:

    ```python
    from keras_gmlp.applications.gmlp import gMLP

    model = gMLP(num_blocks=4, hidden_dim=64, intermediate_dim=384,
                 patch_size=4, input_shape=(32, 32, 3), classes=10)
    ```
    """

    make_block = gmlp_block_factory(hidden_dim, intermediate_dim, gating)
    return build_image_classifier(
        make_block,
        num_blocks,
        hidden_dim,
        patch_size,
        default_size,
        variant,
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
        include_preprocessing,
        drop_path_rate,
        name,
        data_format,
    )


def _gmlp_variant(variant, *builder_args):
    """`gMLP` with the sizes of `GMLP_IMAGE_VARIANTS[variant]`;
    `builder_args` are the arguments of `gMLPS`, in order."""
    config = GMLP_IMAGE_VARIANTS[variant]
    return gMLP(
        config["num_blocks"],
        config["hidden_dim"],
        config["intermediate_dim"],
        config["patch_size"],
        config["default_size"],
        variant,
        *builder_args,
    )


def _docstring(variant):
    config = GMLP_IMAGE_VARIANTS[variant]
    drop_path_note = (
        " The paper's recipe uses\n"
        f"            {config['paper_drop_path_rate']} (`PAPER_DROP_PATH_RATES`)."
    )
    return BASE_DOCSTRING.format(
        **config, builder_args=builder_args_doc(config, drop_path_note)
    )


def gMLPTi(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    include_preprocessing=True,
    drop_path_rate=0.0,
    name="gmlp_ti16",
    data_format=None,
):
    return _gmlp_variant(
        "gmlp_ti16",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
        include_preprocessing,
        drop_path_rate,
        name,
        data_format,
    )


def gMLPS(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    include_preprocessing=True,
    drop_path_rate=0.0,
    name="gmlp_s16",
    data_format=None,
):
    return _gmlp_variant(
        "gmlp_s16",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
        include_preprocessing,
        drop_path_rate,
        name,
        data_format,
    )


def gMLPB(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    include_preprocessing=True,
    drop_path_rate=0.0,
    name="gmlp_b16",
    data_format=None,
):
    return _gmlp_variant(
        "gmlp_b16",
        include_top,
        weights,
        input_tensor,
        input_shape,
        pooling,
        classes,
        classifier_activation,
        include_preprocessing,
        drop_path_rate,
        name,
        data_format,
    )


gMLPTi.__doc__ = _docstring("gmlp_ti16")
gMLPS.__doc__ = _docstring("gmlp_s16")
gMLPB.__doc__ = _docstring("gmlp_b16")
