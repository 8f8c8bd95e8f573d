"""The causal-LM program's flags: the model, the corpus, steps, generation
and --quantize, with the checks on them (a --preset must hold a causal
preset). Standard library only, so `--help` and flag errors answer before
Keras is imported."""

import json
import pathlib

from _shared.commands import python_command
from _shared.flag_values import positive_int
from _shared.flags import add_quantize_flag
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _text_input.flags import CORPUS_RUN_FLAGS
from _text_input.flags import add_corpus_flags
from _text_input.flags import check_corpus_flags
from _text_training.flags import LANGUAGE_MODEL_FAST
from _text_training.flags import LANGUAGE_MODEL_FLAGS
from _text_training.flags import STEP_RUN_FLAGS
from _text_training.flags import add_optimizer_flags
from _text_training.flags import add_step_flags
from _text_training.flags import add_window_flags
from _text_training.flags import check_language_model_flags
from _text_training.flags import check_step_flags
from _token_shards.flags import add_token_files_flag
from _token_shards.flags import check_token_files_flag

MODELS = ("gmlp", "amlp")
CORPORA = ("reference", "docstrings")
SAMPLERS = ("greedy", "beam", "random", "top_k", "top_p", "contrastive")
DEFAULT_PROMPTS = ("the with statement", "a class definition", "an exception is")
FAST = {**LANGUAGE_MODEL_FAST, "max_length": 16}
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "model",
    *LANGUAGE_MODEL_FLAGS,
    "corpus",
    "fast",
    *CORPUS_RUN_FLAGS,
    *STEP_RUN_FLAGS,
)


def build_parser(doc):
    parser = make_parser(doc, "outputs/train_causal_lm")
    parser.set_defaults(epochs=8, batch_size=32)
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="gmlp",
        help="gMLP, or aMLP (gMLP with a tiny causal attention)",
    )
    parser.add_argument("--num-layers", type=positive_int, default=4, help="blocks")
    parser.add_argument("--hidden-dim", type=positive_int, default=128, help="d_model")
    parser.add_argument(
        "--intermediate-dim", type=positive_int, default=512, help="d_ffn, even"
    )
    parser.add_argument(
        "--attention-dim",
        type=positive_int,
        default=32,
        help="aMLP's tiny attention size",
    )
    add_window_flags(parser, "tokens per training window and most tokens generated")
    parser.add_argument(
        "--corpus",
        choices=CORPORA,
        default="reference",
        help="the Python reference, or the standard library's docstrings",
    )
    add_optimizer_flags(parser)
    add_corpus_flags(parser, "--corpus")
    add_token_files_flag(parser)
    add_step_flags(parser)
    add_generation_flags(parser)
    add_quantize_flag(
        parser, "the model that generates", ("int8", "float8", "int4", "gptq")
    )
    return parser


def add_generation_flags(parser):
    """The flags of generation: a preset, prompts, length and samplers."""
    parser.add_argument(
        "--preset", help="generate with this causal preset instead of training"
    )
    parser.add_argument(
        "--prompt",
        action="append",
        help="a text to continue; repeat for several "
        f"(default: {' | '.join(DEFAULT_PROMPTS)})",
    )
    parser.add_argument(
        "--max-length",
        type=positive_int,
        default=48,
        help="generated length in tokens, prompt included; at most "
        "the model's sequence length",
    )
    parser.add_argument(
        "--samplers",
        default=",".join(SAMPLERS),
        help="comma-separated keras-hub samplers to generate with",
    )


def parse_args(doc, argv=None):
    """(parser, flags) of the program whose docstring is `doc`, with
    --fast applied and every flag checked."""
    parser = build_parser(doc)
    args = parser.parse_args(argv)
    args.samplers = [name.strip() for name in args.samplers.split(",") if name.strip()]
    unknown = [name for name in args.samplers if name not in SAMPLERS]
    if unknown or not args.samplers:
        parser.error(
            f"--samplers takes names from {SAMPLERS}; received {unknown or 'none'}"
        )
    if args.prompt is not None and not all(p.strip() for p in args.prompt):
        parser.error("--prompt must not be empty")
    if args.fast:
        for name, value in FAST.items():
            if hasattr(args, name) and not flag_given(
                argv, "--" + name.replace("_", "-")
            ):
                setattr(args, name, value)
        if not flag_given(argv, "--epochs"):
            args.epochs = 1
    check_token_files_flag(parser, args, argv)
    check_language_model_flags(parser, args)
    check_corpus_flags(parser, args)
    check_step_flags(parser, args, argv)
    if args.preset is not None:
        check_preset(parser, args, argv)
    elif args.max_length > args.sequence_length:
        if flag_given(argv, "--max-length"):
            parser.error(
                f"--max-length {args.max_length} exceeds --sequence-length {args.sequence_length}"
            )
        args.max_length = args.sequence_length
    if args.model != "amlp":
        args.attention_dim = None
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args


def check_preset(parser, args, argv):
    """--preset must hold a causal keras-hub preset; --max-length is cut
    to its max_sequence_length unless given."""
    args.preset = pathlib.Path(args.preset).expanduser()
    config_path = args.preset / "config.json"
    if not config_path.is_file():
        parser.error(
            f"--preset {args.preset} holds no preset (no config.json). Train "
            f"one with: {python_command('applications/train_causal_lm.py')}"
        )
    try:
        backbone_config = json.loads(config_path.read_text())["config"]
    except (ValueError, KeyError):
        parser.error(
            f"--preset {args.preset}: config.json is not a keras-hub backbone config"
        )
    if not backbone_config.get("causal"):
        parser.error(
            f"--preset {args.preset} holds a bidirectional encoder (e.g. from "
            "pretrain_mlm.py), which cannot generate. Train a causal one with: "
            f"{python_command('applications/train_causal_lm.py')}"
        )
    limit = backbone_config.get("max_sequence_length")
    if args.max_length > limit:
        if flag_given(argv, "--max-length"):
            parser.error(
                f"--max-length {args.max_length} exceeds the preset's "
                f"max_sequence_length {limit}"
            )
        args.max_length = limit
