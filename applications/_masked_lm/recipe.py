"""The masked-LM program's flags and recipes: the small models and the
paper's configurations, their defaults, the paper's pretraining recipe and
the checks on the flags. Standard library only, so `--help` and flag errors
answer before Keras is imported."""

from _shared.flag_values import positive_int
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _shared.variants import variant_tables
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

SMALL_MODELS = ("gmlp", "amlp")
# The paper's configurations: short name -> builder in keras_gmlp.applications.
PAPER_MODELS = {
    name: row["builder"] for name, row in variant_tables().GMLP_TEXT_VARIANTS.items()
}
MODELS = SMALL_MODELS + tuple(PAPER_MODELS)
SMALL_DEFAULTS = {
    "num_layers": 4,
    "hidden_dim": 128,
    "intermediate_dim": 512,
    "attention_dim": 32,
}
FAST = LANGUAGE_MODEL_FAST
# The paper's pretraining recipe (--recipe paper): batch, length and steps
# from Liu et al. 2021 (section 4, as ../shared/REFERENCE.md records them),
# the optimizer from BERT (Devlin et al. 2019), which the paper follows, and
# BERT's 30,522 word pieces.
PAPER_RECIPE = {
    "batch_size": 256,
    "sequence_length": 512,
    "steps": 1_000_000,
    "warmup_steps": 10_000,
    "learning_rate": 1e-4,
    "weight_decay": 0.01,
    "vocabulary_size": 30522,
    "eval_every": 10_000,
    "save_every": 1_000,
}
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "model",
    *LANGUAGE_MODEL_FLAGS,
    "fast",
    *CORPUS_RUN_FLAGS,
    *STEP_RUN_FLAGS,
)


def build_parser(doc):
    parser = make_parser(doc, "outputs/pretrain_mlm")
    parser.set_defaults(epochs=6, batch_size=32)
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="gmlp",
        help="a small gMLP/aMLP, or one of the paper's configurations",
    )
    parser.add_argument(
        "--num-layers",
        type=positive_int,
        help=f"blocks of a small model (default: {SMALL_DEFAULTS['num_layers']})",
    )
    parser.add_argument(
        "--hidden-dim",
        type=positive_int,
        help=f"d_model of a small model (default: {SMALL_DEFAULTS['hidden_dim']})",
    )
    parser.add_argument(
        "--intermediate-dim",
        type=positive_int,
        help="d_ffn of a small model, even "
        f"(default: {SMALL_DEFAULTS['intermediate_dim']})",
    )
    parser.add_argument(
        "--attention-dim",
        type=positive_int,
        help="tiny attention size of a small aMLP "
        f"(default: {SMALL_DEFAULTS['attention_dim']})",
    )
    add_window_flags(parser, "tokens per window, [CLS] and [SEP] included")
    parser.add_argument(
        "--recipe",
        choices=("paper",),
        help="paper: the paper's pretraining recipe for the paper's "
        "configurations (flags given still win)",
    )
    add_optimizer_flags(parser)
    add_corpus_flags(parser, "the Python reference")
    add_token_files_flag(parser)
    add_step_flags(parser)
    return parser


def parse_args(doc, argv=None):
    """(parser, flags) of the program whose docstring is `doc`, with
    --recipe and --fast applied and every flag checked."""
    parser = build_parser(doc)
    args = parser.parse_args(argv)
    if args.recipe == "paper":
        if args.model not in PAPER_MODELS:
            parser.error(
                f"--recipe paper is the recipe of the paper's configurations "
                f"({', '.join(PAPER_MODELS)}); received --model {args.model}"
            )
        # Parse again with the recipe as defaults, so explicit flags win.
        parser.set_defaults(**PAPER_RECIPE)
        args = parser.parse_args(argv)
    paper = args.model in PAPER_MODELS
    for name in SMALL_DEFAULTS:
        value = getattr(args, name)
        if paper and value is not None:
            parser.error(
                f"--{name.replace('_', '-')} sets the size of a small model; "
                f"--model {args.model} has the paper's fixed configuration"
            )
        if value is None:
            setattr(args, name, FAST[name] if args.fast else SMALL_DEFAULTS[name])
    if args.model != "amlp":
        args.attention_dim = None
    if args.fast:
        args.sequence_length = min(args.sequence_length, FAST["sequence_length"])
        args.vocabulary_size = min(args.vocabulary_size, FAST["vocabulary_size"])
        if not flag_given(argv, "--epochs"):
            args.epochs = 1
    check_token_files_flag(parser, args, argv)
    check_language_model_flags(parser, args)
    check_corpus_flags(parser, args)
    check_step_flags(parser, args, argv)
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args
