"""The flags the text programs share to train: steps, checkpoints,
evaluations and precision, the language models' optimizer and their --fast
sizes. Standard library only, so `--help` and flag errors answer before
Keras is imported."""

from _shared.flag_values import non_negative_float
from _shared.flag_values import non_negative_int
from _shared.flag_values import positive_float
from _shared.flag_values import positive_int
from _shared.flag_values import unit_float
from _shared.flags import flag_given
from _text_input.flags import FAST_DOCUMENTS
from _text_input.flags import FAST_VOCABULARY_SIZE
from _text_input.flags import VOCABULARY_SIZE

# What --fast sets in the language-model programs: a model and corpus
# small enough for a smoke run of every step.
LANGUAGE_MODEL_FAST = {
    "num_layers": 1,
    "hidden_dim": 32,
    "intermediate_dim": 64,
    "attention_dim": 8,
    "sequence_length": 32,
    "vocabulary_size": FAST_VOCABULARY_SIZE,
    "documents": FAST_DOCUMENTS,
}
# The flags that size a language model and its windows: a resumed run must
# have the same.
LANGUAGE_MODEL_FLAGS = (
    "num_layers",
    "hidden_dim",
    "intermediate_dim",
    "attention_dim",
    "sequence_length",
    "vocabulary_size",
    "dropout",
)
DTYPE_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
# The step and file flags that define a text program's run (its data order,
# schedule and numerics): a resumed run must have the same.
STEP_RUN_FLAGS = (
    "train_files",
    "validation_files",
    "test_files",
    "shuffle_buffer",
    "batch_size",
    "seed",
    "epochs",
    "steps",
    "warmup_steps",
    "save_every",
    "dtype_policy",
    "num_processes",
    "input_shards",
)


def check_language_model_flags(parser, args):
    """The checks the language-model programs share, as flag errors."""
    if args.intermediate_dim % 2:
        parser.error(
            f"--intermediate-dim must be even; received {args.intermediate_dim}"
        )
    if args.sequence_length < 8:
        parser.error(
            f"--sequence-length must be at least 8; received {args.sequence_length}"
        )
    # None: the size of --token-files' vocabulary.
    if args.vocabulary_size is not None and args.vocabulary_size < 50:
        parser.error(
            f"--vocabulary-size must be at least 50; received {args.vocabulary_size}"
        )


def add_window_flags(parser, sequence_help):
    """--sequence-length (`sequence_help` says what it bounds) and
    --vocabulary-size of the language-model programs."""
    parser.add_argument(
        "--sequence-length",
        type=positive_int,
        default=64,
        help=sequence_help,
    )
    parser.add_argument(
        "--vocabulary-size",
        type=positive_int,
        default=VOCABULARY_SIZE,
        help="WordPiece vocabulary size to train (a small corpus may give fewer)",
    )


def add_optimizer_flags(parser):
    """--dropout, --learning-rate and --weight-decay of the language-model
    programs."""
    parser.add_argument("--dropout", type=unit_float, default=0.1, help="dropout rate")
    add_adamw_flags(parser, 1e-3)


def add_adamw_flags(parser, learning_rate):
    """--learning-rate (peak, default `learning_rate`) and --weight-decay of
    the text programs' AdamW."""
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        default=learning_rate,
        help="peak AdamW learning rate (linear warm-up, cosine decay)",
    )
    parser.add_argument(
        "--weight-decay",
        type=non_negative_float,
        default=0.01,
        help="AdamW weight decay",
    )


def add_step_flags(parser):
    """The flags that count training in steps, and its precision: the text
    programs' checkpoint periods, evaluations and schedule."""
    group = parser.add_argument_group("steps and precision")
    group.add_argument(
        "--steps",
        type=positive_int,
        help="train for this many steps (batches) instead of --epochs",
    )
    group.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        help="steps of linear learning-rate warm-up before the cosine decay "
        "(default: a tenth of the steps)",
    )
    group.add_argument(
        "--eval-every",
        type=positive_int,
        help="steps between validation scores, which choose the best "
        "checkpoint (default: one epoch with --epochs, else about a tenth "
        "of the steps)",
    )
    group.add_argument(
        "--save-every",
        type=positive_int,
        help="steps between checkpoints a rerun resumes from; divides "
        "--eval-every (default: --eval-every)",
    )
    group.add_argument(
        "--eval-batches",
        type=positive_int,
        default=100,
        help="most batches of the validation and of the test split scored",
    )
    group.add_argument(
        "--log-every-steps",
        type=positive_int,
        default=100,
        help="in a log file (output not a terminal), a progress line every "
        "this many steps (step, loss, tokens/s, input share, time left) and "
        "the same TensorBoard scalars",
    )
    group.add_argument(
        "--log-every-s",
        type=positive_float,
        default=30.0,
        help="... or every this many seconds, whichever comes first",
    )
    group.add_argument(
        "--dtype-policy",
        choices=DTYPE_POLICIES,
        default="float32",
        help="Keras dtype policy: mixed precision computes in bfloat16 or "
        "float16 with float32 weights",
    )
    from _shared.distribute import add_distribute_flags

    add_distribute_flags(parser.add_argument_group("devices and hosts"), True)


def check_step_flags(parser, args, argv):
    """The step flags' checks that need no data, as flag errors."""
    from _shared.distribute import check_distribute_flags

    check_distribute_flags(parser, args)
    if args.steps is not None and flag_given(argv, "--epochs"):
        parser.error("--steps and --epochs both set the length of training: give one")
    if args.eval_every and args.save_every and args.eval_every % args.save_every:
        parser.error(
            f"--save-every {args.save_every} must divide --eval-every "
            f"{args.eval_every}, so that every evaluation has a checkpoint"
        )
    if args.steps is not None:  # known before any data: refused at once
        check_step_periods(parser, args)


def check_step_periods(parser, args):
    """--save-every divides --steps (and --eval-every), and --warmup-steps
    is at most --steps: each given value, or the recipe's default."""
    if args.warmup_steps is not None and args.warmup_steps > args.steps:
        parser.error(
            f"--warmup-steps {args.warmup_steps} must be at most the {args.steps} steps"
        )
    for flag, value in (("--steps", args.steps), ("--eval-every", args.eval_every)):
        if value and args.save_every and value % args.save_every:
            parser.error(
                f"--save-every {args.save_every} must divide {flag} {value}: "
                "training stops and is evaluated at checkpoints"
            )
