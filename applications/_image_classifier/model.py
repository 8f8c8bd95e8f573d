"""The image program's model: a keras_gmlp.applications builder or a
custom gMLP/Mixer, with a new head, started from --weights of any kind."""

import math
import re

from .recipe import NAMED_MODELS


def read_start_weights(parser, args):
    """The --weights as a timm state dict (name -> NumPy array), so every
    kind of file goes through the same resampling and head replacement."""
    import keras

    from keras_gmlp.applications import timm_state_dict
    from keras_gmlp.applications.weights import fetch_imagenet_weights
    from keras_gmlp.applications.weights import read_checkpoint

    path = args.weights
    try:
        if path == "imagenet":
            return read_checkpoint(fetch_imagenet_weights(args.model))
        if path.endswith(".keras"):
            source = keras.saving.load_model(path, compile=False)
            return timm_state_dict(source)
        if path.endswith(".weights.h5"):
            return timm_state_dict(model_from_keras_weights(args, path))
        return read_checkpoint(path)
    except (ValueError, OSError, ImportError) as error:
        parser.error(f"--weights {path}: {error}")


def model_from_keras_weights(args, path):
    """Builds the --model architecture at the size the `.weights.h5` file was
    trained at (read from its variables' shapes) and loads the file."""
    import h5py

    shapes = {}

    def record(name, item):
        # Returns None: h5py stops visiting at the first other value.
        if isinstance(item, h5py.Dataset):
            shapes[name] = item.shape

    with h5py.File(path, "r") as handle:
        handle.visititems(record)

    def find(pattern):
        # Keras names each saved layer after its class, with a counter
        # suffix when the session has built others before.
        return [
            shape
            for name, shape in sorted(shapes.items())
            if re.fullmatch(pattern.replace("#", r"(?:_\d+)?"), name)
        ]

    stem = find(r"layers/patch_embedding#/projection/vars/0")
    tokens = [s[-1] for s in find(r"layers/g_mlp_block#/spatial_gating_unit#/vars/1")]
    tokens += [s[0] for s in find(r"layers/mixer_block#/token_expand_dense#/vars/0")]
    if not stem or not tokens:
        raise ValueError(
            "not the weights of a gMLP or MLP-Mixer image classifier (no "
            "patch embedding or token-mixing weights found)"
        )
    patch, channels = stem[0][0], stem[0][2]
    side = math.isqrt(tokens[0])
    if side * side != tokens[0]:
        raise ValueError(
            f"the weights cover {tokens[0]} tokens, not a square grid; load "
            "them into a model of their own size and pass a timm state dict"
        )
    heads = find(r"layers/dense#/vars/0")
    head = heads[0] if heads else None
    return build_classifier(
        args,
        input_shape=(side * patch, side * patch, channels),
        include_top=head is not None,
        classes=head[-1] if head is not None else 1000,
        weights=path,
    )


def build_classifier(args, input_shape, weights=None, **kwargs):
    """The --model from keras_gmlp.applications."""
    import keras_gmlp.applications as applications
    from keras_gmlp.applications.gmlp import gMLP
    from keras_gmlp.applications.mlp_mixer import MLPMixer

    kwargs.update(
        weights=weights,
        input_shape=input_shape,
        drop_path_rate=args.drop_path_rate,
        classifier_activation=None,
        name=args.model,
    )
    if args.model == "gmlp":
        return gMLP(
            num_blocks=args.depth,
            hidden_dim=args.width,
            intermediate_dim=args.ffn_ratio * args.width,
            patch_size=args.patch_size,
            **kwargs,
        )
    if args.model == "mixer":
        return MLPMixer(
            num_blocks=args.depth,
            hidden_dim=args.width,
            tokens_mlp_dim=max(1, args.width // 2),
            channels_mlp_dim=args.ffn_ratio * args.width,
            patch_size=args.patch_size,
            **kwargs,
        )
    return getattr(applications, NAMED_MODELS[args.model])(**kwargs)


def build_model(parser, args, channels, classes, state):
    """The classifier with a fresh `classes`-way head (float32 logits), its
    body (and head, when the classes match) loaded from `state`, and with
    --lora-rank, LoRA factors on the loaded weights: only they, the adapted
    layers' biases and the head train (with --quantize-base, beside int8
    kernels). Returns (model, how it started)."""
    model, start = load_classifier(parser, args, channels, classes, state)
    if args.quantize_base:
        from _shared.serving import quantize_in_place

        quantize_in_place(model, args.quantize_base, keep=("predictions",))
    if args.lora_rank:
        from keras_gmlp.applications import enable_lora

        # Before compiling, and before a resumed fit restores its backup,
        # which holds the factors' optimizer state.
        enable_lora(model, args.lora_rank)
    return model, start


def load_classifier(parser, args, channels, classes, state):
    """The classifier of `build_model`, before LoRA."""
    import keras

    from keras_gmlp.applications import load_timm_weights

    body = build_classifier(
        args,
        (args.image_size, args.image_size, channels),
        include_top=False,
        pooling="avg",
    )
    # Named like the builders' own head, so the model converts to timm's
    # layout (timm_state_dict) like any keras_gmlp classifier.
    head = keras.layers.Dense(
        classes,
        name="predictions",
        dtype="float32" if args.mixed_precision else None,
    )
    model = keras.Model(body.input, head(body.output), name=body.name)
    if state is None:
        return model, "random initialisation"
    same_head = state.get("head.weight", None) is not None and tuple(
        state["head.weight"].shape
    ) == (classes, body.output.shape[-1])
    try:
        load_timm_weights(model if same_head else body, state)
    except ValueError as error:
        parser.error(f"--weights {args.weights}: {error}")
    if same_head:
        return model, "all weights loaded, head kept"
    return model, "body loaded, new head"
