"""MLP-Mixer image classifiers (Tolstikhin et al., 2021), keras.applications style."""

from keras_gmlp.applications._image_classifier import build_image_classifier
from keras_gmlp.layers._patch_mlp import mixer_block_factory

BASE_DOCSTRING = """Instantiates the {title} architecture.

    Reference: "MLP-Mixer: An all-MLP Architecture for Vision" (Tolstikhin
    et al., NeurIPS 2021), https://arxiv.org/abs/2105.01601. {params}
    parameters with the 1000-class top, as timm's `{timm_name}`. It builds
    the layers of `keras_gmlp.models.MLPMixerBackbone` (preset
    `"{timm_name}"`), the keras-hub class to use for `from_preset`,
    `save_to_preset` and `tf.data` preprocessing.

    The model takes raw RGB pixels in `[0, 255]` and scales them to
    `[-1, 1]` inside (the normalisation of the Google Mixer weights) unless
    `include_preprocessing=False`; `preprocess_input` is a pass-through.
    Any input size that the patch size {patch} divides works. timm
    checkpoints trained at another size are loaded with the token-mixing
    MLP resampled to the new patch grid (`load_timm_weights`).

    Args:
        include_top: whether to include the classification head (final
            norm, mean over tokens, dense layer).
        weights: `None` (random initialization), {imagenet}a path to a
            Keras `.weights.h5`, or a path to a timm checkpoint
            (`.safetensors`, or `.pth`/`.bin` when torch is installed),
            converted on load.
        input_tensor: optional Keras tensor (i.e. output of `keras.Input()`)
            to use as image input for the model.
        input_shape: optional `(height, width, channels)`, default
            `(224, 224, 3)`. Height and width must be known multiples of
            {patch}.
        pooling: pooling of the features when `include_top=False`: `None`
            returns the normalised token grid `(batch, rows, columns,
            channels)`, `"avg"` or `"max"` pool it to `(batch, channels)`.
        classes: number of classes, only with `include_top=True`; must be
            1000 with `weights="imagenet"`.
        classifier_activation: activation of the top layer; `None` returns
            logits. Only `None` or `"softmax"` with pretrained weights.
        include_preprocessing: whether the model scales `[0, 255]` pixels.
        drop_path_rate: final stochastic depth rate, increasing linearly
            from 0 over the blocks.
        name: name of the model.

    Returns:
        A `keras.Model` for one input size: calling it on images of another
        size raises a ValueError; build a model for that size instead.

    Examples:

    ```python
    model = keras_gmlp.applications.{builder}(weights=None)
    probabilities = model(keras.random.uniform((1, 224, 224, 3), 0, 255))
    ```
"""


def MLPMixer(
    num_blocks,
    hidden_dim,
    tokens_mlp_dim,
    channels_mlp_dim,
    patch_size=16,
    default_size=224,
    variant="mixer",
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=1000,
    classifier_activation="softmax",
    include_preprocessing=True,
    drop_path_rate=0.0,
    name="mixer",
):
    """Instantiates an MLP-Mixer image classifier of any size.

    The `Mixer*` builders call this with the paper's sizes; call it directly
    for other depths, widths or patch sizes (the layout matches timm's
    `MlpMixer`).

    Args:
        num_blocks: int, number of Mixer blocks.
        hidden_dim: int, token width.
        tokens_mlp_dim: int, hidden width of the token-mixing MLP.
        channels_mlp_dim: int, hidden width of the channel-mixing MLP.
        patch_size: int, side of the square patches.
        default_size: int, image side used when no input shape is given.
        variant: str, key of the public ImageNet weights, if any.
        include_top, weights, input_tensor, input_shape, pooling, classes,
        classifier_activation, include_preprocessing, drop_path_rate, name:
            as in `MixerB16`.

    Returns:
        A `keras.Model`.

    Examples:

    ```python
    from keras_gmlp.applications.mlp_mixer import MLPMixer

    model = MLPMixer(num_blocks=4, hidden_dim=64, tokens_mlp_dim=32,
                     channels_mlp_dim=256, patch_size=4,
                     input_shape=(32, 32, 3), classes=10)
    ```
    """

    make_block = mixer_block_factory(
        hidden_dim, tokens_mlp_dim, channels_mlp_dim
    )
    return build_image_classifier(
        make_block, num_blocks, hidden_dim, patch_size, default_size, variant,
        include_top, weights, input_tensor, input_shape, pooling, classes,
        classifier_activation, include_preprocessing, drop_path_rate, name,
    )


def _variant(variant, num_blocks, hidden_dim, patch_size):
    def builder(
        include_top=True,
        weights=None,
        input_tensor=None,
        input_shape=None,
        pooling=None,
        classes=1000,
        classifier_activation="softmax",
        include_preprocessing=True,
        drop_path_rate=0.0,
        name=variant,
    ):
        return MLPMixer(
            num_blocks=num_blocks,
            hidden_dim=hidden_dim,
            # timm's mlp_ratio=(0.5, 4.0).
            tokens_mlp_dim=hidden_dim // 2,
            channels_mlp_dim=4 * hidden_dim,
            patch_size=patch_size,
            default_size=224,
            variant=variant,
            include_top=include_top,
            weights=weights,
            input_tensor=input_tensor,
            input_shape=input_shape,
            pooling=pooling,
            classes=classes,
            classifier_activation=classifier_activation,
            include_preprocessing=include_preprocessing,
            drop_path_rate=drop_path_rate,
            name=name,
        )

    return builder


def _document(name, variant, num_blocks, hidden_dim, patch_size, params):
    builder = _variant(variant, num_blocks, hidden_dim, patch_size)
    builder.__name__ = builder.__qualname__ = name
    imagenet = ""
    if variant in ("mixer_b16", "mixer_l16"):
        imagenet = (
            f'`"imagenet"` (timm\'s `{variant}_224.goog_in21k_ft_in1k`,\n'
            "            downloaded once, sha256-checked and cached in\n"
            "            `~/.keras/models`; see `IMAGENET_WEIGHTS`), "
        )
    builder.__doc__ = BASE_DOCSTRING.format(
        title=f"MLP-Mixer {name[5:6]}/{patch_size}",
        params=params,
        timm_name=f"{variant}_224",
        patch=patch_size,
        imagenet=imagenet,
        builder=name,
    )
    return builder


MixerS32 = _document("MixerS32", "mixer_s32", 8, 512, 32, "19,104,624")
MixerS16 = _document("MixerS16", "mixer_s16", 8, 512, 16, "18,528,264")
MixerB32 = _document("MixerB32", "mixer_b32", 12, 768, 32, "60,293,428")
MixerB16 = _document("MixerB16", "mixer_b16", 12, 768, 16, "59,880,472")
MixerL32 = _document("MixerL32", "mixer_l32", 24, 1024, 32, "206,939,264")
MixerL16 = _document("MixerL16", "mixer_l16", 24, 1024, 16, "208,196,168")
