"""The image program's flags and recipes: what can be trained, with which
defaults, and the checks on the flags. Standard library only, so `--help`
and flag errors answer before Keras is imported."""

import os

from _shared.flag_values import non_negative_float
from _shared.flag_values import non_negative_int
from _shared.flag_values import positive_float
from _shared.flag_values import positive_int
from _shared.flag_values import unit_float
from _shared.flags import add_quantize_base_flag
from _shared.flags import add_quantize_flag
from _shared.flags import check_quantize_base
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _shared.variants import variant_tables

DEFAULT_OUTPUT_DIR = "outputs/train_image_classifier"


VARIANTS = variant_tables().IMAGE_CLASSIFIER_VARIANTS
# --model: a variant's short name (its builder in keras_gmlp.applications),
# or a custom size.
NAMED_MODELS = {name: row["builder"] for name, row in VARIANTS.items()}
CUSTOM_MODELS = ("gmlp", "mixer")
PATCH_SIZES = {name: row["patch_size"] for name, row in VARIANTS.items()}
IMAGENET_MODELS = tuple(name for name, row in VARIANTS.items() if row["imagenet"])
WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin", ".weights.h5", ".keras")

# The custom models' size: the offline default, and the --fast one.
CUSTOM_SIZE = {"depth": 4, "width": 64, "patch_size": 4, "image_size": 16}
FAST_SIZE = {"depth": 1, "width": 16, "patch_size": 4, "image_size": 16}
DEFAULT_FFN_RATIO = {"gmlp": 6, "mixer": 4}
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "model",
    "depth",
    "width",
    "patch_size",
    "ffn_ratio",
    "image_size",
    "weights",
    "lora_rank",
    "quantize_base",
    "drop_path_rate",
    "dataset",
    "fast",
)

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


def build_parser(doc):
    """The program's ArgumentParser; `doc` is its docstring."""
    parser = make_parser(doc, DEFAULT_OUTPUT_DIR)
    parser.set_defaults(batch_size=64)
    parser.set_defaults(epochs=8)
    add_model_flags(parser.add_argument_group("model"))
    add_data_flags(parser.add_argument_group("data"))
    group = parser.add_argument_group(
        "optimisation (--recipe paper sets the paper's values)"
    )
    add_optimiser_flags(group)
    add_augmentation_flags(group)
    add_scale_flags(parser.add_argument_group("precision and devices"))
    return parser


def add_model_flags(group):
    group.add_argument(
        "--model",
        default="gmlp",
        choices=list(CUSTOM_MODELS) + list(NAMED_MODELS),
        help="a builder of keras_gmlp.applications, or 'gmlp'/'mixer' of the "
        "size given by --depth/--width/--patch-size/--ffn-ratio",
    )
    group.add_argument(
        "--depth",
        type=positive_int,
        default=None,
        help=f"blocks of a custom model (default: {CUSTOM_SIZE['depth']})",
    )
    group.add_argument(
        "--width",
        type=positive_int,
        default=None,
        help=f"d_model of a custom model (default: {CUSTOM_SIZE['width']})",
    )
    group.add_argument(
        "--patch-size",
        type=positive_int,
        default=None,
        help=f"patch side of a custom model (default: {CUSTOM_SIZE['patch_size']})",
    )
    group.add_argument(
        "--ffn-ratio",
        type=positive_int,
        default=None,
        help="d_ffn / d_model of a custom gMLP, or channel-MLP width / d_model "
        "of a custom Mixer (default: 6 for gmlp, 4 for mixer)",
    )
    group.add_argument(
        "--image-size",
        type=positive_int,
        default=None,
        help="side of the (square) input images; default 16 for the custom "
        "models, 224 for the named ones",
    )
    add_start_flags(group)
    group.add_argument(
        "--drop-path-rate",
        type=unit_float,
        default=0.0,
        help="stochastic depth rate of the last block (linear from 0)",
    )


def add_start_flags(group):
    """The weights a model starts from, and which of them train."""
    group.add_argument(
        "--weights",
        default=None,
        help="start from a timm checkpoint (.safetensors/.pth/.bin), a Keras "
        ".weights.h5 or .keras file of the same architecture, or 'imagenet' "
        f"({', '.join(IMAGENET_MODELS)}); the head is replaced when the "
        "classes differ and the spatial weights are resampled to --image-size",
    )
    group.add_argument(
        "--lora-rank",
        type=positive_int,
        default=None,
        help="fine-tune the --weights with LoRA factors of this rank on the "
        "blocks' channel projections (keras_gmlp.applications.enable_lora) "
        "and a trainable head, the other weights frozen (default: every "
        "weight trains)",
    )
    add_quantize_base_flag(group, "the body (the head stays float)")


def add_data_flags(group):
    group.add_argument(
        "--dataset",
        default="digits",
        help="'digits' (offline, bundled with scikit-learn) or a "
        "tensorflow-datasets image-classification name, e.g. mnist, cifar10",
    )
    group.add_argument("--data-dir", default=None, help="tensorflow-datasets data_dir")


def add_optimiser_flags(group):
    group.add_argument(
        "--recipe",
        choices=("none", "paper"),
        default="none",
        help="'paper': the gMLP paper's DeiT-style ImageNet recipe "
        "(explicit flags still win)",
    )
    group.add_argument(
        "--learning-rate",
        type=positive_float,
        default=2e-3,
        help="peak learning rate of AdamW",
    )
    group.add_argument(
        "--schedule",
        choices=("cosine", "constant"),
        default="cosine",
        help="learning-rate schedule after the warmup",
    )
    group.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        default=0,
        help="linear warmup steps from 0 to --learning-rate",
    )
    group.add_argument(
        "--weight-decay",
        type=non_negative_float,
        default=0.05,
        help="AdamW weight decay (not applied to biases and norms)",
    )
    group.add_argument(
        "--adam-epsilon",
        type=positive_float,
        default=1e-7,
        help="AdamW epsilon",
    )
    group.add_argument(
        "--clip-norm",
        type=positive_float,
        default=None,
        help="clip the global gradient norm to this value",
    )
    group.add_argument(
        "--ema",
        action="store_true",
        help="keep an exponential moving average of the weights and finish with it",
    )
    group.add_argument(
        "--ema-momentum",
        type=unit_float,
        default=0.9999,
        help="momentum of --ema",
    )


def add_augmentation_flags(group):
    group.add_argument(
        "--label-smoothing",
        type=unit_float,
        default=0.0,
        help="label smoothing of the cross-entropy",
    )
    group.add_argument(
        "--mixup",
        type=non_negative_float,
        default=0.0,
        help="MixUp alpha (0: off)",
    )
    group.add_argument(
        "--cutmix",
        type=non_negative_float,
        default=0.0,
        help="CutMix factor (0: off); with --mixup, one of the two per batch",
    )
    group.add_argument(
        "--randaugment",
        type=non_negative_int,
        default=0,
        help="RandAugment operations per image (0: off)",
    )
    group.add_argument(
        "--randaugment-magnitude",
        type=unit_float,
        default=0.5,
        help="RandAugment factor in [0, 1)",
    )
    group.add_argument(
        "--random-resized-crop",
        type=unit_float,
        default=0.0,
        help="random crops of up to this fraction zoomed in (independent "
        "height and width, so random aspect), at a random position; 0: off",
    )
    group.add_argument("--flip", action="store_true", help="random horizontal flips")


def add_scale_flags(group):
    group.add_argument(
        "--mixed-precision",
        action="store_true",
        help="train in mixed bfloat16 (the logits stay float32)",
    )
    from _shared.distribute import add_distribute_flags

    add_distribute_flags(group)
    # Not a model flag: it only adds a score (and best_<mode>.keras) to the
    # report, so a run resumed with or without it is the same run.
    add_quantize_flag(
        group, "the chosen model for the test split", ("int8", "float8", "int4")
    )


def parse_args(doc, argv=None):
    """Parses and checks the flags, with nothing heavier than the standard
    library loaded; every problem is a flag error (exit status 2)."""
    parser = build_parser(doc)
    args = parser.parse_args(argv)
    if args.recipe == "paper":
        # Parse again with the recipe as defaults, so explicit flags win.
        parser.set_defaults(**PAPER_RECIPE)
        args = parser.parse_args(argv)
        if args.drop_path_rate == 0.0 and not flag_given(argv, "--drop-path-rate"):
            args.drop_path_rate = {"gmlp_s16": 0.05, "gmlp_b16": 0.2}.get(
                args.model, 0.0
            )
    set_model_size(parser, args)
    if args.fast and not flag_given(argv, "--epochs"):
        args.epochs = 1
    if args.weights is not None:
        check_weights(parser, args)
    elif args.lora_rank is not None:
        parser.error(
            "--lora-rank: LoRA adapts pretrained weights; pass --weights (a "
            "checkpoint, or 'imagenet') to start from"
        )
    check_quantize_base(parser, args)
    from _shared.distribute import check_distribute_flags

    check_distribute_flags(parser, args)
    if args.data_dir is not None:
        args.data_dir = os.path.expanduser(args.data_dir)
    args.output_dir = str(prepare_output_dir(parser, args.output_dir))
    return parser, args


def set_model_size(parser, args):
    """Fills in the size of a custom model (--fast's or the default) and
    the patch and image size of every model; a size flag given for a named
    model, or an image size the patch does not divide, is a flag error."""
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


def check_weights(parser, args):
    """--weights is 'imagenet' for a model that has such weights, or an
    existing file of a kind the program reads, checked by its first bytes
    so that a wrong file is refused before any data or model work."""
    if args.weights == "imagenet":
        if args.model not in IMAGENET_MODELS:
            parser.error(
                f"--weights imagenet: there are public ImageNet weights "
                f"only for {', '.join(IMAGENET_MODELS)}, not --model "
                f"{args.model}"
            )
        return
    if not args.weights.endswith(WEIGHT_SUFFIXES):
        parser.error(
            f"--weights {args.weights}: expected 'imagenet' or a file ending "
            f"in one of {', '.join(WEIGHT_SUFFIXES)}"
        )
    if not os.path.exists(args.weights):
        parser.error(f"--weights: file not found: {args.weights}")
    if not os.path.isfile(args.weights):
        parser.error(f"--weights: not a file: {args.weights}")
    problem = weights_file_problem(args.weights)
    if problem is not None:
        parser.error(f"--weights: {problem}: {args.weights}")


# The first bytes of an HDF5 file, which Keras' .weights.h5 files are.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def weights_file_problem(path):
    """None if the file at `path` starts as its suffix says (HDF5 for
    .weights.h5, a zip with a config for .keras, a safetensors header, or a
    PyTorch zip or pickle), else what it is not."""
    import zipfile

    with open(path, "rb") as handle:
        head = handle.read(9)
    if path.endswith(".weights.h5"):
        valid = head.startswith(HDF5_SIGNATURE)
        return None if valid else "not a Keras weights file"
    if path.endswith(".keras"):
        try:
            with zipfile.ZipFile(path) as archive:
                valid = "config.json" in archive.namelist()
        except zipfile.BadZipFile:
            valid = False
        return None if valid else "not a Keras weights file"
    if path.endswith(".safetensors"):
        # An 8-byte little-endian header size, then the JSON header.
        header_size = int.from_bytes(head[:8], "little")
        valid = len(head) == 9 and head[8:] == b"{"
        valid = valid and header_size <= os.path.getsize(path) - 8
        return None if valid else "not a safetensors checkpoint"
    # torch.save writes a zip; before PyTorch 1.6, a pickle (protocol 2+).
    valid = zipfile.is_zipfile(path) or head[:1] == b"\x80"
    return None if valid else "not a PyTorch checkpoint"
