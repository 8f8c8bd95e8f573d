"""Train a gMLP or MLP-Mixer image classifier.

The offline default trains a small gMLP (4 blocks, width 64, 16x16 images in
4x4 patches) on scikit-learn's bundled handwritten digits for 8 epochs; it
reaches about 98% test accuracy in one to three minutes on a laptop CPU:

    python3 applications/train_image_classifier.py

Everything is written to --output-dir: best.keras (best validation
accuracy), final.keras, history.csv, training_curves.png,
confusion_matrix.png, spatial_weights.png (gMLP models) and summary.json.
The models output logits. An interrupted run (Ctrl-C, a kill) resumes from
its last completed epoch when rerun with the same --output-dir.

Larger jobs:

    # gMLP-S on ImageNet with the paper's DeiT-style recipe
    python3 applications/train_image_classifier.py --recipe paper \\
        --model gmlp_s16 --dataset imagenet2012 --data-dir ~/tensorflow_datasets
    # fine-tune timm's ImageNet gMLP-S on CIFAR-10 at 224x224
    python3 applications/train_image_classifier.py --model gmlp_s16 \\
        --weights gmlp_s16_224.safetensors --dataset cifar10 --image-size 224

Any tensorflow-datasets image-classification dataset works with --dataset;
it is evaluated on its labelled test split, or on "validation" where the
test labels are withheld (imagenet2012), or on a held-out tenth of "train".
"""

import math
import os
import pathlib
import re
import sys
import time

from _program import make_parser
from _program import non_negative_float
from _program import positive_int
from _program import prepare_output_dir
from _program import run
from _program import unit_float

DEFAULT_OUTPUT_DIR = "outputs/train_image_classifier"

# --model: builder name in keras_gmlp.applications, or a custom size.
NAMED_MODELS = {
    "gmlp_ti16": "gMLPTi",
    "gmlp_s16": "gMLPS",
    "gmlp_b16": "gMLPB",
    "mixer_s16": "MixerS16",
    "mixer_s32": "MixerS32",
    "mixer_b16": "MixerB16",
    "mixer_b32": "MixerB32",
    "mixer_l16": "MixerL16",
    "mixer_l32": "MixerL32",
}
CUSTOM_MODELS = ("gmlp", "mixer")
PATCH_SIZES = {name: int(name[-2:]) for name in NAMED_MODELS}
# Where keras_gmlp.applications has public ImageNet weights (weights.py).
IMAGENET_MODELS = ("gmlp_s16", "mixer_b16", "mixer_l16")
WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin", ".weights.h5", ".keras")

# The custom models' size: the offline default, and the --fast one.
CUSTOM_SIZE = {"depth": 4, "width": 64, "patch_size": 4, "image_size": 16}
FAST_SIZE = {"depth": 1, "width": 16, "patch_size": 4, "image_size": 16}
DEFAULT_FFN_RATIO = {"gmlp": 6, "mixer": 4}
FAST_DIGITS = 200  # images of the digits data used by --fast

# tensorflow-datasets datasets whose "test" labels are withheld (all -1).
UNLABELLED_TEST = ("imagenet2012", "imagenet2012_subset")

# The paper's ImageNet recipe (Liu et al. 2021, appendix; DeiT-style). Flags
# given on the command line win. Keras ships RandAugment, not the AutoAugment
# policy, so RandAugment (2 ops, magnitude 9 of 10) stands in for it.
PAPER_RECIPE = {
    "dataset": "imagenet2012",
    "image_size": 224,
    "epochs": 300,
    "batch_size": 4096,
    "learning_rate": 1e-3,
    "schedule": "cosine",
    "warmup_steps": 10_000,
    "weight_decay": 0.05,
    "adam_epsilon": 1e-6,
    "clip_norm": 1.0,
    "label_smoothing": 0.1,
    "mixup": 0.8,
    "cutmix": 1.0,
    "randaugment": 2,
    "randaugment_magnitude": 0.9,
    "random_resized_crop": 0.5,
    "flip": True,
}


def build_parser():
    parser = make_parser(__doc__, DEFAULT_OUTPUT_DIR)
    parser.set_defaults(batch_size=64)
    parser.set_defaults(epochs=8)
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model",
        default="gmlp",
        choices=list(CUSTOM_MODELS) + list(NAMED_MODELS),
        help="a builder of keras_gmlp.applications, or 'gmlp'/'mixer' of the "
        "size given by --depth/--width/--patch-size/--ffn-ratio",
    )
    model.add_argument(
        "--depth", type=positive_int, default=None,
        help=f"blocks of a custom model (default {CUSTOM_SIZE['depth']})",
    )
    model.add_argument(
        "--width", type=positive_int, default=None,
        help=f"d_model of a custom model (default {CUSTOM_SIZE['width']})",
    )
    model.add_argument(
        "--patch-size", type=positive_int, default=None,
        help=f"patch side of a custom model (default {CUSTOM_SIZE['patch_size']})",
    )
    model.add_argument(
        "--ffn-ratio", type=positive_int, default=None,
        help="d_ffn / d_model of a custom gMLP (default 6), channel-MLP width "
        "/ d_model of a custom Mixer (default 4)",
    )
    model.add_argument(
        "--image-size", type=positive_int, default=None,
        help="side of the (square) input images; default 16 for the custom "
        "models, 224 for the named ones",
    )
    model.add_argument(
        "--weights", default=None,
        help="start from a timm checkpoint (.safetensors/.pth/.bin), a Keras "
        ".weights.h5 or .keras file of the same architecture, or 'imagenet' "
        f"({', '.join(IMAGENET_MODELS)}); the head is replaced when the "
        "classes differ and the spatial weights are resampled to --image-size",
    )
    model.add_argument(
        "--drop-path-rate", type=unit_float, default=0.0,
        help="stochastic depth rate of the last block (linear from 0)",
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--dataset", default="digits",
        help="'digits' (offline, bundled with scikit-learn) or a "
        "tensorflow-datasets image-classification name, e.g. mnist, cifar10",
    )
    data.add_argument(
        "--data-dir", default=None, help="tensorflow-datasets data_dir"
    )
    recipe = parser.add_argument_group("optimisation (--recipe paper sets the paper's values)")
    recipe.add_argument(
        "--recipe", choices=("none", "paper"), default="none",
        help="'paper': the gMLP paper's DeiT-style ImageNet recipe "
        "(explicit flags still win)",
    )
    recipe.add_argument(
        "--learning-rate", type=non_negative_float, default=2e-3,
        help="peak learning rate of AdamW",
    )
    recipe.add_argument(
        "--schedule", choices=("cosine", "constant"), default="cosine",
        help="learning-rate schedule after the warmup",
    )
    recipe.add_argument(
        "--warmup-steps", type=int, default=0,
        help="linear warmup steps from 0 to --learning-rate",
    )
    recipe.add_argument(
        "--weight-decay", type=non_negative_float, default=0.05,
        help="AdamW weight decay (not applied to biases and norms)",
    )
    recipe.add_argument(
        "--adam-epsilon", type=non_negative_float, default=1e-7,
        help="AdamW epsilon",
    )
    recipe.add_argument(
        "--clip-norm", type=non_negative_float, default=None,
        help="clip the global gradient norm to this value",
    )
    recipe.add_argument(
        "--ema", action="store_true",
        help="keep an exponential moving average of the weights and "
        "finish with it",
    )
    recipe.add_argument(
        "--ema-momentum", type=unit_float, default=0.9999,
        help="momentum of --ema",
    )
    recipe.add_argument(
        "--label-smoothing", type=unit_float, default=0.0,
        help="label smoothing of the cross-entropy",
    )
    recipe.add_argument(
        "--mixup", type=non_negative_float, default=0.0,
        help="MixUp alpha (0: off)",
    )
    recipe.add_argument(
        "--cutmix", type=non_negative_float, default=0.0,
        help="CutMix factor (0: off); with --mixup, one of the two per batch",
    )
    recipe.add_argument(
        "--randaugment", type=int, default=0,
        help="RandAugment operations per image (0: off)",
    )
    recipe.add_argument(
        "--randaugment-magnitude", type=unit_float, default=0.5,
        help="RandAugment factor in [0, 1)",
    )
    recipe.add_argument(
        "--random-resized-crop", type=unit_float, default=0.0,
        help="random crops of up to this fraction zoomed in (independent "
        "height and width, so random aspect), at a random position; 0: off",
    )
    recipe.add_argument(
        "--flip", action="store_true", help="random horizontal flips"
    )
    scale = parser.add_argument_group("precision and devices")
    scale.add_argument(
        "--mixed-precision", action="store_true",
        help="train in mixed bfloat16 (the logits stay float32)",
    )
    scale.add_argument(
        "--distribute", choices=("none", "data", "model"), default="none",
        help="JAX only: 'data' replicates the model on every device "
        "(keras.distribution.DataParallel); 'model' also shards the MLPs "
        "(keras_gmlp.distribution.ModelParallel)",
    )
    scale.add_argument(
        "--model-shards", type=positive_int, default=None,
        help="devices each model is sharded over with --distribute model "
        "(default: all)",
    )
    return parser


def parse_args(argv=None):
    """Parses and checks the flags, with nothing heavier than the standard
    library loaded; every problem is a flag error (exit status 2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.recipe == "paper":
        # Parse again with the recipe as defaults, so explicit flags win.
        parser.set_defaults(**PAPER_RECIPE)
        args = parser.parse_args(argv)
        if args.drop_path_rate == 0.0 and "--drop-path-rate" not in " ".join(
            argv if argv is not None else sys.argv[1:]
        ):
            args.drop_path_rate = {"gmlp_s16": 0.05, "gmlp_b16": 0.2}.get(
                args.model, 0.0
            )
    custom = args.model in CUSTOM_MODELS
    if not custom:
        for flag in ("depth", "width", "patch_size", "ffn_ratio"):
            if getattr(args, flag) is not None:
                parser.error(
                    f"--{flag.replace('_', '-')} sets the size of a custom "
                    f"model (--model gmlp or mixer); --model {args.model} "
                    "has a fixed size"
                )
    size = FAST_SIZE if args.fast else CUSTOM_SIZE
    if custom:
        for flag in ("depth", "width", "patch_size"):
            if getattr(args, flag) is None:
                setattr(args, flag, size[flag])
        if args.ffn_ratio is None:
            args.ffn_ratio = DEFAULT_FFN_RATIO[args.model]
    else:
        args.patch_size = PATCH_SIZES[args.model]
    if args.image_size is None:
        args.image_size = size["image_size"] if custom else 224
    if args.image_size % args.patch_size:
        parser.error(
            f"--image-size {args.image_size} is not a multiple of the patch "
            f"size {args.patch_size} of --model {args.model}"
        )
    if args.fast and "--epochs" not in " ".join(
        argv if argv is not None else sys.argv[1:]
    ):
        args.epochs = 1
    if args.warmup_steps < 0:
        parser.error(f"--warmup-steps must be >= 0, received {args.warmup_steps}")
    if args.randaugment < 0:
        parser.error(f"--randaugment must be >= 0, received {args.randaugment}")
    if args.weights is not None:
        if args.weights == "imagenet":
            if args.model not in IMAGENET_MODELS:
                parser.error(
                    f"--weights imagenet: there are public ImageNet weights "
                    f"only for {', '.join(IMAGENET_MODELS)}, not --model "
                    f"{args.model}"
                )
        elif not os.path.isfile(args.weights):
            parser.error(f"--weights {args.weights}: no such file")
        elif not args.weights.endswith(WEIGHT_SUFFIXES):
            parser.error(
                f"--weights {args.weights}: expected a file ending in one of "
                f"{', '.join(WEIGHT_SUFFIXES)}"
            )
    if args.model_shards is not None and args.distribute != "model":
        parser.error("--model-shards needs --distribute model")
    if args.data_dir is not None:
        args.data_dir = os.path.expanduser(args.data_dir)
    args.output_dir = str(prepare_output_dir(parser, args.output_dir))
    return parser, args


# ---------------------------------------------------------------- data


def load_digits(image_size, fast):
    """scikit-learn's 1,797 8x8 digits at `image_size` (nearest neighbour),
    as raw pixels in [0, 255]; a fixed 80/20 train/test split."""
    import numpy as np
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    if fast:
        order = order[:FAST_DIGITS]
    source = np.arange(image_size) * 8 // image_size
    images = digits.images[order][:, source][:, :, source]
    images = (images * (255.0 / 16.0)).astype("float32")[..., None]
    labels = digits.target[order].astype("int32")
    split = int(0.8 * len(labels))
    return {
        "train": (images[:split], labels[:split]),
        "evaluation": (images[split:], labels[split:]),
        "classes": 10,
        "channels": 1,
        "train_split": "digits[:80%]",
        "evaluation_split": "digits[80%:]",
    }


def tfds_builder(parser, args):
    """The dataset's builder, or a flag error if tensorflow-datasets does not
    know the name or it is not an image-classification dataset."""
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(args.dataset, data_dir=args.data_dir)
    except tfds.core.registered.DatasetNotFoundError:
        parser.error(
            f"--dataset {args.dataset}: tensorflow-datasets has no dataset of "
            "that name (see `tfds.list_builders()`), and it is not 'digits'"
        )
    info = builder.info
    keys = info.supervised_keys
    features = info.features
    if not (
        isinstance(keys, tuple) and len(keys) == 2
        and isinstance(features[keys[0]], tfds.features.Image)
        and isinstance(features[keys[1]], tfds.features.ClassLabel)
    ):
        parser.error(
            f"--dataset {args.dataset} is not an image-classification dataset "
            f"(its supervised keys are {keys}, expected (image, class label))"
        )
    return builder


def choose_splits(name, known_splits):
    """(train split, evaluation split): "validation" where the test labels
    are withheld, else "test", else "validation", else a tenth of train.
    `known_splits` is empty when tensorflow-datasets does not list them."""
    base = name.split(":")[0].split("/")[0]
    if not known_splits:
        evaluation = "validation" if base in UNLABELLED_TEST else "test"
        return "train", evaluation
    if "validation" in known_splits and base in UNLABELLED_TEST:
        return "train", "validation"
    for split in ("test", "validation"):
        if split in known_splits:
            return "train", split
    return "train[:90%]", "train[90%:]"


def load_tfds(builder, args, channels):
    """tf.data pipelines of (raw pixels at --image-size, integer label)."""
    import tensorflow as tf

    builder.download_and_prepare()
    info = builder.info
    train_split, evaluation_split = choose_splits(args.dataset, dict(info.splits))
    image_key, label_key = info.supervised_keys
    source_channels = info.features[image_key].shape[-1]

    def prepare(example_image, label):
        image = tf.cast(example_image, "float32")
        image = tf.image.resize(image, (args.image_size, args.image_size))
        if source_channels == 1 and channels == 3:
            image = tf.image.grayscale_to_rgb(image)
        return image, tf.cast(label, "int32")

    def read(split):
        dataset = builder.as_dataset(split=split, as_supervised=True)
        if args.fast:
            dataset = dataset.take(64 if split == train_split else 32)
        return dataset.map(prepare, num_parallel_calls=tf.data.AUTOTUNE)

    def count(split, dataset):
        try:
            if not args.fast:
                return info.splits[split].num_examples
        except (KeyError, TypeError):
            pass
        return int(dataset.reduce(0, lambda n, _: n + 1))

    train, evaluation = read(train_split), read(evaluation_split)
    return {
        "train": train,
        "evaluation": evaluation,
        "train_size": count(train_split, train),
        "evaluation_size": count(evaluation_split, evaluation),
        "classes": info.features[label_key].num_classes,
        "channels": channels,
        "source_channels": source_channels,
        "train_split": train_split,
        "evaluation_split": evaluation_split,
    }


# ---------------------------------------------------------------- model


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
            shape for name, shape in sorted(shapes.items())
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
            num_blocks=args.depth, hidden_dim=args.width,
            intermediate_dim=args.ffn_ratio * args.width,
            patch_size=args.patch_size, **kwargs,
        )
    if args.model == "mixer":
        return MLPMixer(
            num_blocks=args.depth, hidden_dim=args.width,
            tokens_mlp_dim=max(1, args.width // 2),
            channels_mlp_dim=args.ffn_ratio * args.width,
            patch_size=args.patch_size, **kwargs,
        )
    return getattr(applications, NAMED_MODELS[args.model])(**kwargs)


def build_model(parser, args, channels, classes, state):
    """The classifier with a fresh `classes`-way head (float32 logits), its
    body (and head, when the classes match) loaded from `state`."""
    import keras
    from keras_gmlp.applications import load_timm_weights

    body = build_classifier(
        args, (args.image_size, args.image_size, channels),
        include_top=False, pooling="avg",
    )
    # Named like the builders' own head, so the model converts to timm's
    # layout (timm_state_dict) like any keras_gmlp classifier.
    head = keras.layers.Dense(
        classes, name="predictions",
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


# ---------------------------------------------------------------- training


def make_augmentation(args, seed):
    """Keras' augmentation layers for the flags: (image layers, a function of
    (images, one-hot labels) batches that applies MixUp or CutMix)."""
    import keras

    # Pixels and labels stay float32 under --mixed-precision: the model
    # casts its inputs itself.
    float32 = {"dtype": "float32"}
    image_layers = []
    if args.random_resized_crop:
        zoom = (-args.random_resized_crop, 0.0)
        image_layers += [
            keras.layers.RandomZoom(zoom, zoom, seed=seed, **float32),
            keras.layers.RandomTranslation(0.1, 0.1, seed=seed + 1, **float32),
        ]
    if args.flip:
        image_layers.append(keras.layers.RandomFlip("horizontal", seed=seed + 2, **float32))
    if args.randaugment:
        image_layers.append(
            keras.layers.RandAugment(
                value_range=(0, 255), num_ops=args.randaugment,
                factor=args.randaugment_magnitude, seed=seed + 3, **float32,
            )
        )
    mixers = []
    if args.mixup:
        mixers.append(keras.layers.MixUp(alpha=args.mixup, seed=seed + 4, **float32))
    if args.cutmix:
        mixers.append(keras.layers.CutMix(factor=args.cutmix, seed=seed + 5, **float32))
    return image_layers, mixers


def tf_augment(image_layers, mixers):
    """A tf.data map function of (images, one-hot labels) batches: the image
    layers, then MixUp or CutMix (each on half the batches when both are on,
    DeiT's switch)."""
    import tensorflow as tf

    def mix(layer, images, labels):
        mixed = layer({"images": images, "labels": labels})
        return mixed["images"], mixed["labels"]

    def augment(images, labels):
        for layer in image_layers:
            images = layer(images, training=True)
        if len(mixers) == 1:
            return mix(mixers[0], images, labels)
        if mixers:
            return tf.cond(
                tf.random.uniform(()) < 0.5,
                lambda: mix(mixers[0], images, labels),
                lambda: mix(mixers[1], images, labels),
            )
        return images, labels

    return augment


def make_digits_batches(args, data, image_layers, mixers, classes):
    """(batches, what to fit on): batches in an order fixed by (seed,
    epoch); augmented in a tf.data pipeline (graph mode, fast on every
    backend) when augmentation is on."""
    import numpy as np

    from _training import EpochSeededBatches

    images, labels = data["train"]
    batches = EpochSeededBatches(
        images, np.eye(classes, dtype="float32")[labels],
        batch_size=args.batch_size, seed=args.seed,
    )
    if not (image_layers or mixers):
        return batches, batches
    import tensorflow as tf

    def generate():
        # Called once per epoch, after the epoch callback set the epoch.
        for index in range(len(batches)):
            yield batches[index]

    signature = (
        tf.TensorSpec((None,) + images.shape[1:], "float32"),
        tf.TensorSpec((None, classes), "float32"),
    )
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    # Tells fit the epoch length, which a generator does not.
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(len(batches)))
    dataset = dataset.map(tf_augment(image_layers, mixers))
    return batches, dataset.prefetch(tf.data.AUTOTUNE)


def make_tfds_batches(args, data, image_layers, mixers, classes):
    import tensorflow as tf

    def one_hot(images, labels):
        return images, tf.one_hot(labels, classes)

    train = (
        data["train"]
        .shuffle(min(data["train_size"], 10_000), seed=args.seed)
        .batch(args.batch_size)
        .map(one_hot)
    )
    if image_layers or mixers:
        train = train.map(
            tf_augment(image_layers, mixers), num_parallel_calls=tf.data.AUTOTUNE
        )
    evaluation = data["evaluation"].batch(args.batch_size).map(one_hot)
    return train.prefetch(tf.data.AUTOTUNE), evaluation.prefetch(tf.data.AUTOTUNE)


def set_distribution(parser, args):
    import keras

    if args.distribute == "none":
        return None
    if keras.backend.backend() != "jax":
        parser.error(
            f"--distribute {args.distribute} runs on the JAX backend "
            f"(KERAS_BACKEND=jax); this is {keras.backend.backend()}. On "
            "TensorFlow use a tf.distribute strategy around the model instead"
        )
    devices = keras.distribution.list_devices()
    if args.distribute == "data":
        replicas = len(devices)
        distribution = keras.distribution.DataParallel(devices=devices)
    else:
        from keras_gmlp.distribution import ModelParallel
        from keras_gmlp.distribution import get_layout_map

        shards = args.model_shards or len(devices)
        if len(devices) % shards:
            parser.error(
                f"--model-shards {shards} does not divide the "
                f"{len(devices)} devices"
            )
        replicas = len(devices) // shards
        mesh = keras.distribution.DeviceMesh(
            (replicas, shards), ("batch", "model"), devices
        )
        distribution = ModelParallel(
            layout_map=get_layout_map(mesh), batch_dim_name="batch"
        )
    if args.batch_size % replicas:
        parser.error(
            f"--batch-size {args.batch_size} is not a multiple of the "
            f"{replicas} data-parallel replicas of --distribute {args.distribute}"
        )
    keras.distribution.set_distribution(distribution)
    return f"{args.distribute} over {len(devices)} devices"


def learning_rate(args, steps_per_epoch):
    import keras

    total = steps_per_epoch * args.epochs
    warmup = min(args.warmup_steps, total)
    if args.schedule == "constant":
        if not warmup:
            return args.learning_rate
        # A cosine decay to the same value is constant after the warmup.
        return keras.optimizers.schedules.CosineDecay(
            0.0, max(1, total - warmup), alpha=1.0,
            warmup_target=args.learning_rate, warmup_steps=warmup,
        )
    if not warmup:
        return keras.optimizers.schedules.CosineDecay(args.learning_rate, total)
    return keras.optimizers.schedules.CosineDecay(
        0.0, max(1, total - warmup),
        warmup_target=args.learning_rate, warmup_steps=warmup,
    )


# ---------------------------------------------------------------- pictures


def plot_confusion_matrix(labels, predictions, classes, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from _training import save_figure

    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (labels, predictions), 1)
    side = min(12.0, 3.0 + 0.45 * classes)
    figure, axis = plt.subplots(figsize=(side + 1.0, side))
    image = axis.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axis, label="images")
    if classes <= 20:
        limit = matrix.max() / 2 if matrix.size else 0
        for (row, column), count in np.ndenumerate(matrix):
            axis.text(
                column, row, str(count), ha="center", va="center", fontsize=8,
                color="white" if count > limit else "black",
            )
        axis.set_xticks(range(classes))
        axis.set_yticks(range(classes))
    axis.set_xlabel("predicted class")
    axis.set_ylabel("true class")
    axis.set_title(title)
    figure.tight_layout()
    save_figure(figure, path)


def plot_spatial_weights(model, path):
    """The SGUs' learned spatial weights, one colour scale per panel."""
    import matplotlib

    matplotlib.use("Agg")
    from keras_gmlp.visualization import plot_spatial_weights as plot

    from _program import atomic_path

    figure = plot(model)
    for axis in figure.axes:
        if axis.images:
            colorbar = figure.colorbar(axis.images[0], ax=axis, shrink=0.8)
            colorbar.ax.tick_params(labelsize=5)
    figure.suptitle("spatial weights W[token, :] on the patch grid", fontsize=8)
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=150)


# ---------------------------------------------------------------- main


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    output_dir = pathlib.Path(args.output_dir)
    builder = None
    if args.dataset != "digits":
        builder = tfds_builder(parser, args)

    import keras
    import numpy as np

    from keras_gmlp.host_memory import keep_freed_host_memory
    from _training import fit_verbose
    from _training import plot_history
    from _training import resumable_callbacks
    from _training import save_model
    from _training import write_summary

    if keras.backend.backend() == "jax":
        # Before the first computation: XLA's CPU runtime would otherwise
        # fault in its scratch buffer page by page on every training step.
        keep_freed_host_memory()
    if keras.backend.backend() == "tensorflow":
        # Same seed, same result, also for a resumed run.
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(args.seed)

    state = read_start_weights(parser, args) if args.weights else None
    distribution = set_distribution(parser, args)
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")

    if builder is None:
        data = load_digits(args.image_size, args.fast)
        data_channels = data["channels"]
    else:
        data_channels = builder.info.features[builder.info.supervised_keys[0]].shape[-1]
    channels = data_channels
    if state is not None:
        channels = int(state["stem.proj.weight"].shape[1])
        if channels != data_channels and not (data_channels == 1 and channels == 3):
            parser.error(
                f"--weights {args.weights} expects {channels}-channel images; "
                f"--dataset {args.dataset} has {data_channels}"
            )
    if builder is not None:
        data = load_tfds(builder, args, channels)
    elif channels == 3:
        # Grey digits for an RGB checkpoint.
        data["train"] = (np.repeat(data["train"][0], 3, -1), data["train"][1])
        data["evaluation"] = (
            np.repeat(data["evaluation"][0], 3, -1), data["evaluation"][1]
        )
    classes = data["classes"]

    model, start = build_model(parser, args, channels, classes, state)
    image_layers, mixers = make_augmentation(args, args.seed)
    if builder is None:
        batches, train = make_digits_batches(
            args, data, image_layers, mixers, classes
        )
        steps_per_epoch = len(batches)
        evaluation_images, evaluation_labels = data["evaluation"]
        validation = (evaluation_images, np.eye(classes)[evaluation_labels])
        train_size, evaluation_size = len(data["train"][1]), len(evaluation_labels)
    else:
        train, validation = make_tfds_batches(
            args, data, image_layers, mixers, classes
        )
        steps_per_epoch = math.ceil(data["train_size"] / args.batch_size)
        train_size, evaluation_size = data["train_size"], data["evaluation_size"]

    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate(args, steps_per_epoch),
        weight_decay=args.weight_decay,
        epsilon=args.adam_epsilon,
        global_clipnorm=args.clip_norm,
        use_ema=args.ema,
        ema_momentum=args.ema_momentum,
    )
    # As in DeiT and timm: no weight decay on biases and norm scales.
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=args.label_smoothing
        ),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    print(
        f"{args.model}: {model.count_params():,} parameters ({start}); "
        f"{args.dataset}: {train_size} training images ({data['train_split']}), "
        f"{evaluation_size} evaluation images ({data['evaluation_split']}); "
        f"backend {keras.backend.backend()}"
        + (f"; distributed: {distribution}" if distribution else ""),
        flush=True,
    )

    callbacks, history = resumable_callbacks(
        output_dir, monitor="val_accuracy", mode="max"
    )
    if builder is None:
        callbacks.insert(0, batches.epoch_callback())
    model.fit(
        train,
        validation_data=validation,
        validation_batch_size=args.batch_size if builder is None else None,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=fit_verbose(),
        # The batches shuffle themselves by (seed, epoch); Keras' shuffle of
        # a PyDataset's batch order draws from the global random state,
        # which a resumed run does not share with an uninterrupted one.
        shuffle=False,
    )
    save_model(model, output_dir / "final.keras")

    if builder is None:
        loss, accuracy = model.evaluate(
            *validation, batch_size=args.batch_size, verbose=0
        )
        logits = model.predict(evaluation_images, batch_size=args.batch_size, verbose=0)
        true_labels = evaluation_labels
    else:
        loss, accuracy = model.evaluate(validation, verbose=0)
        logits = model.predict(validation, verbose=0)
        true_labels = np.concatenate(
            [np.argmax(y, -1) for _, y in validation.as_numpy_iterator()]
        )
    predictions = np.argmax(logits, axis=-1)
    plot_history(history, output_dir / "training_curves.png", f"{args.model} on {args.dataset}")
    plot_confusion_matrix(
        true_labels, predictions, classes, output_dir / "confusion_matrix.png",
        f"{args.model} on {args.dataset} ({data['evaluation_split']}): "
        f"accuracy {accuracy:.3f}",
    )
    if args.model.startswith("gmlp"):
        plot_spatial_weights(model, output_dir / "spatial_weights.png")
    else:
        print(
            "spatial_weights.png skipped: plot_spatial_weights draws gMLP "
            "spatial gating units, and Mixer models have none."
        )
    best_epoch = None
    accuracies = history.metric("val_accuracy")
    if accuracies:
        best_epoch = int(np.argmax(accuracies)) + 1
    write_summary(
        output_dir / "summary.json",
        args,
        started,
        model=args.model,
        parameters=model.count_params(),
        start_weights=start,
        dataset=args.dataset,
        train_split=data["train_split"],
        evaluation_split=data["evaluation_split"],
        train_images=int(train_size),
        evaluation_images=int(evaluation_size),
        classes=int(classes),
        epochs_completed=len(history.rows),
        test_loss=float(loss),
        test_accuracy=float(accuracy),
        best_val_accuracy=float(max(accuracies)) if accuracies else None,
        best_epoch=best_epoch,
        distribution=distribution,
        mixed_precision=args.mixed_precision,
    )
    print(
        f"{data['evaluation_split']}: loss {loss:.4f}, accuracy {accuracy:.4f} "
        f"({time.time() - started:.0f} s). Outputs in {output_dir}/",
        flush=True,
    )


if __name__ == "__main__":
    run(main)
