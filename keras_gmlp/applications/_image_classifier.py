"""What the gMLP and MLP-Mixer builders share: keras.applications' argument
rules, the input, the stem, the top and weight loading."""

import os

import keras

from keras_gmlp.applications._checked_functional import CheckedFunctional
from keras_gmlp.applications.weights import IMAGENET_WEIGHTS
from keras_gmlp.applications.weights import fetch_imagenet_weights
from keras_gmlp.layers._patch_mlp import block_drop_path_rates
from keras_gmlp.layers._patch_mlp import check_data_format
from keras_gmlp.layers._patch_mlp import patch_mlp
from keras_gmlp.utils.timm.checkpoint import TIMM_SUFFIXES
from keras_gmlp.utils.timm.checkpoint import read_checkpoint
from keras_gmlp.utils.timm.state_dict import assign_timm_state
from keras_gmlp.utils.timm.state_dict import load_timm_weights

KERAS_SUFFIXES = (".weights.h5", ".h5", ".keras")


def _check_sizes(num_blocks, hidden_dim, patch_size, default_size):
    for name, value in (
        ("num_blocks", num_blocks),
        ("hidden_dim", hidden_dim),
        ("patch_size", patch_size),
        ("default_size", default_size),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"`{name}` must be a positive integer. Received: {name}={value!r}"
            )


def _check_weights(weights):
    is_path = isinstance(weights, (str, os.PathLike)) and weights != "imagenet"
    is_file = is_path and os.path.isfile(weights)
    if is_path and not is_file:
        what = "is a directory" if os.path.isdir(weights) else "does not exist"
        raise ValueError(
            f"The weights file {os.path.abspath(weights)!r} {what}. "
            "`weights` must be `None`, `imagenet` or the path of a weights "
            f"file. Received: weights={weights!r}"
        )
    if not (weights in (None, "imagenet") or is_file):
        raise ValueError(
            "The `weights` argument should be either `None` (random "
            "initialization), `imagenet` (pre-training on ImageNet), or the "
            f"path to the weights file to be loaded. Received: weights={weights!r}"
        )
    if is_file and not os.fspath(weights).endswith(KERAS_SUFFIXES + TIMM_SUFFIXES):
        raise ValueError(
            "A weights file must be a Keras `.weights.h5` (or `.keras`) or a "
            "timm checkpoint "
            f"({', '.join(TIMM_SUFFIXES)}). Received: weights={weights!r}"
        )


def _check_arguments(
    variant,
    include_top,
    weights,
    pooling,
    classes,
    classifier_activation,
):
    _check_weights(weights)
    if weights == "imagenet" and variant not in IMAGENET_WEIGHTS:
        raise ValueError(
            f"There are no public ImageNet weights for {variant}; they exist "
            f"for {', '.join(sorted(IMAGENET_WEIGHTS))}. Received: "
            f"weights={weights!r}"
        )
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(
            'If using `weights="imagenet"` with `include_top=True`, '
            f"`classes` should be 1000. Received: classes={classes}"
        )
    if include_top and (
        isinstance(classes, bool) or not isinstance(classes, int) or classes < 1
    ):
        raise ValueError(
            "`classes` must be a positive integer when `include_top=True`. "
            f"Received: classes={classes!r}"
        )
    if pooling not in (None, "avg", "max"):
        raise ValueError(
            "`pooling` must be one of None, 'avg' or 'max'. "
            f"Received: pooling={pooling!r}"
        )
    if include_top and weights is not None:
        activation = keras.activations.get(classifier_activation)
        if activation not in (
            keras.activations.get("softmax"),
            keras.activations.get(None),
        ):
            raise ValueError(
                "Only `None` and `softmax` activations are allowed for the "
                "`classifier_activation` argument when using pretrained "
                "weights, with `include_top=True`; Received: "
                f"classifier_activation={classifier_activation}"
            )


def _image_input(
    input_tensor, input_shape, default_size, patch_size, weights, data_format
):
    channels_first = data_format == "channels_first"
    layout = (
        "(channels, height, width)" if channels_first else "(height, width, channels)"
    )
    if input_shape is None and input_tensor is not None:
        input_shape = tuple(input_tensor.shape[1:])
    if input_shape is None:
        input_shape = (3, default_size, default_size)
        if not channels_first:
            input_shape = (default_size, default_size, 3)
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(
            f"`input_shape` must be a tuple of three integers, {layout} with "
            f"data_format={data_format!r}. Received: input_shape={input_shape}"
        )
    height, width, channels = (
        input_shape[1:] + input_shape[:1] if channels_first else input_shape
    )
    if weights == "imagenet" and channels != 3:
        raise ValueError(
            f"The input must have 3 channels; Received `input_shape={input_shape}`"
        )
    # The spatial weights span the whole token grid, so its size is fixed
    # when the model is built.
    if height is None or width is None:
        raise ValueError(
            "The token-mixing weights cover a fixed patch grid, so the "
            "height and width of the input must be known. Received: "
            f"input_shape={input_shape}"
        )
    if (
        height < patch_size
        or width < patch_size
        or height % patch_size
        or (width % patch_size)
    ):
        raise ValueError(
            f"The input height and width must be positive multiples of the "
            f"patch size {patch_size}; `input_shape` is {layout} with "
            f"data_format={data_format!r}. Received: input_shape={input_shape}"
        )
    if input_tensor is None:
        inputs = keras.Input(shape=input_shape)
        return inputs, inputs
    if tuple(input_tensor.shape[1:]) != input_shape:
        raise ValueError(
            f"`input_shape` does not match the shape of `input_tensor` "
            f"{tuple(input_tensor.shape)}. Received: input_shape={input_shape}"
        )
    if not keras.backend.is_keras_tensor(input_tensor):
        inputs = keras.Input(tensor=input_tensor, shape=input_shape)
        return inputs, inputs
    # Like keras.applications: the model starts where input_tensor's graph does.
    sources = keras.utils.get_source_inputs(input_tensor)
    return sources[0] if len(sources) == 1 else sources, input_tensor


def build_image_classifier(
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
    data_format=None,
):
    """Builds a patch-embedding, block-stack, norm, pooled-head classifier.

    `make_block` comes from `keras_gmlp.layers._patch_mlp`, which builds
    the stem, blocks and norm; the head is named `predictions`, the name
    the timm conversion relies on. Channels-first images are transposed
    once, before the stem, so the layers and weights are those of the
    channels-last model.
    """
    _check_sizes(num_blocks, hidden_dim, patch_size, default_size)
    _check_arguments(
        variant,
        include_top,
        weights,
        pooling,
        classes,
        classifier_activation,
    )
    block_drop_path_rates(drop_path_rate, num_blocks)
    data_format = check_data_format(data_format)
    inputs, x = _image_input(
        input_tensor, input_shape, default_size, patch_size, weights, data_format
    )
    # Fetched and read before building, so a missing or unreadable file
    # fails fast.
    weights, checkpoint = _fetch_and_read(weights, variant)
    if data_format == "channels_first":
        # The layers are channels-last on every backend (PatchEmbedding).
        x = keras.layers.Permute((2, 3, 1), name="to_channels_last")(x)
    if include_preprocessing:
        # timm's gMLP and Mixer weights expect mean = std = 0.5 on [0, 1],
        # i.e. pixels in [-1, 1].
        x = keras.layers.Rescaling(1.0 / 127.5, offset=-1.0, name="rescaling")(x)
    # The same layers as the keras-hub image backbones build.
    features = patch_mlp(
        x, make_block, num_blocks, hidden_dim, patch_size, drop_path_rate
    )
    x = _top(features, hidden_dim, include_top, pooling, classes, classifier_activation)
    if data_format == "channels_first" and not include_top and pooling is None:
        x = keras.layers.Permute((3, 1, 2), name="feature_map_channels_first")(x)
    model = CheckedFunctional(inputs, x, name=name)
    if checkpoint is not None:
        assign_timm_state(model, checkpoint, repr(os.fspath(weights)))
    elif weights is not None:
        load_weights(model, weights)
    return model


def _fetch_and_read(weights, variant):
    """`weights` as a local path, and the timm checkpoint it holds (None
    for Keras weights or none)."""
    if weights == "imagenet":
        weights = fetch_imagenet_weights(variant)
    if weights is None or not os.fspath(weights).endswith(TIMM_SUFFIXES):
        return weights, None
    try:
        return weights, read_checkpoint(weights)
    except ValueError as error:
        raise ValueError(f"{error} Received: weights={weights!r}") from error


def _top(features, hidden_dim, include_top, pooling, classes, classifier_activation):
    grid, x = features["grid"], features["tokens"]
    # Tokens are (batch, tokens, channels) whatever the image data format,
    # which the pooling layers would otherwise read from the Keras config.
    if include_top:
        x = keras.layers.GlobalAveragePooling1D("channels_last", name="avg_pool")(x)
        return keras.layers.Dense(
            classes, activation=classifier_activation, name="predictions"
        )(x)
    if pooling == "avg":
        return keras.layers.GlobalAveragePooling1D("channels_last", name="avg_pool")(x)
    if pooling == "max":
        return keras.layers.GlobalMaxPooling1D("channels_last", name="max_pool")(x)
    return keras.layers.Reshape(grid + (hidden_dim,), name="feature_map")(x)


# The Args and Returns of the per-variant image builders (`gMLPS`,
# `MixerB16`, ...), which take the same arguments.
BUILDER_ARGS_DOC = """Args:
        include_top: whether to include the classification head (final
            norm, mean over tokens, dense layer).
        weights: `None` (random initialization), {imagenet}a path to a
            Keras `.weights.h5`, or a path to a timm checkpoint
            (`.safetensors`, or `.pth`/`.bin` when torch is installed),
            converted on load.
        input_tensor: optional Keras tensor (i.e. output of `keras.Input()`)
            to use as image input for the model.
        input_shape: optional `(height, width, channels)`, default
            `({default_size}, {default_size}, 3)`; `(channels, height, width)`
            with `data_format="channels_first"`. Height and width must be
            known multiples of {patch_size}.
        pooling: pooling of the features when `include_top=False`: `None`
            returns the normalised token grid `(batch, rows, columns,
            channels)` (`(batch, channels, rows, columns)` with
            `"channels_first"`), `"avg"` or `"max"` pool it to `(batch, channels)`.
        classes: number of classes, only with `include_top=True`; must be
            1000 with `weights="imagenet"`.
        classifier_activation: activation of the top layer; `None` returns
            logits. Only `None` or `"softmax"` with pretrained weights.
        include_preprocessing: whether the model scales `[0, 255]` pixels.
        drop_path_rate: final stochastic depth rate, increasing linearly
            from 0 over the blocks; or a list of one rate per block (timm
            gives every block the same rate).{drop_path_note}
        name: name of the model.
        data_format: `"channels_last"` or `"channels_first"`, the layout of
            the images; defaults to `keras.config.image_data_format()`.
            Channels-first images are transposed once before the stem, so
            the outputs and weights (timm's included) are those of the
            channels-last model.

    Returns:
        A `keras.Model` for one input size: calling it on images of another
        size raises a ValueError; build a model for that size instead."""


def builder_args_doc(variant, drop_path_note=""):
    """The Args and Returns docstring text of an image builder, from its
    variant table row; `drop_path_note` follows the `drop_path_rate` line."""
    return BUILDER_ARGS_DOC.format(
        imagenet=imagenet_weights_doc(variant),
        default_size=variant["default_size"],
        patch_size=variant["patch_size"],
        drop_path_note=drop_path_note,
    )


def imagenet_weights_doc(variant):
    """The builders' docstring text for `weights="imagenet"` of a variant
    table row; empty when it has no public weights."""
    imagenet = variant["imagenet"]
    if imagenet is None:
        return ""
    name = imagenet["repository"].split("/")[-1]
    if imagenet["revision"] is not None and imagenet["sha256"] is not None:
        check = "checked against its pinned\n            full sha256 at every use"
    else:
        # Nothing may claim more than is checked: the 8 digits in the
        # release file's name at download, then the stamp written then.
        check = (
            "no pinned revision or full sha256 yet:\n            the "
            "8-digit sha256 prefix in timm's release file name is\n"
            "            checked at download, then every use checks the "
            "size and\n            sha256 recorded at download"
        )
    return (
        f'`"imagenet"`\n            (timm\'s `{name}`, downloaded once into '
        f"`~/.keras/models`;\n            {check}; see `IMAGENET_WEIGHTS`), "
    )


def load_weights(model, path):
    """Loads a Keras `.weights.h5` or a timm checkpoint, all or nothing."""
    path = os.fspath(path)
    if path.endswith(TIMM_SUFFIXES):
        load_timm_weights(model, path)
        return
    # Keras loads layer by layer; restore the initial values if it stops
    # half-way, so a failed load never leaves a mixture behind.
    initial = [keras.ops.convert_to_numpy(v) for v in model.weights]
    try:
        model.load_weights(path)
    except Exception as error:
        for variable, value in zip(model.weights, initial):
            variable.assign(value)
        if not isinstance(error, ValueError):
            raise
        raise ValueError(
            f"{error}\n\nNo weights were loaded from {path!r}. Keras weights "
            "files load only into the same architecture and input size. For "
            "another input size, build the model at the size it was trained "
            "at, load them there, and transfer them with resampling: "
            "`load_timm_weights(new_model, timm_state_dict(old_model))`."
        ) from error
