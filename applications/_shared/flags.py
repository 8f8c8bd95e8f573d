"""The flags every program takes, parsed before Keras is imported.

Flags are parsed and the output directory is checked here, with nothing
heavier than the standard library loaded, so `--help` and flag errors answer
at once.
"""

import argparse
import pathlib
import sys
import tempfile

from .flag_values import fraction
from .flag_values import non_negative_float
from .flag_values import non_negative_int
from .flag_values import positive_float
from .flag_values import positive_int
from .flag_values import seed_int
from .flag_values import unit_float

# Set by the programs' tests and CI: tiny data and one short epoch, enough to
# run every step of a program end to end.
FAST_HELP = "tiny data and model, for a smoke run of every step (what CI runs)"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the module docstring's layout and states each flag's default
    once: appended as "(default: X)" unless the help already says it, or
    the flag has none (None, or off for a switch)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """Flag errors in two lines: a short usage and the reason. argparse's
    own usage lists every flag (some 28 lines), which buries the reason."""

    def error(self, message):
        self.exit(
            2,
            f"usage: {self.prog} [flags] (--help lists them)\n{self.prog}: error: {message}\n",
        )


def make_parser(doc, default_output_dir):
    """An ArgumentParser whose description is the program's docstring, with
    the flags every program takes."""
    summary, _, details = doc.strip().partition("\n")
    parser = _Parser(
        description=summary,
        epilog=details.strip(),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--output-dir",
        default=default_output_dir,
        help="where models, history, plots and the summary go; rerunning "
        "with the same directory resumes an interrupted run",
    )
    parser.add_argument(
        "--epochs", type=positive_int, default=None, help="training epochs"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=None, help="batch size"
    )
    parser.add_argument("--seed", type=seed_int, default=0, help="random seed")
    parser.add_argument("--fast", action="store_true", help=FAST_HELP)
    add_run_flags(parser)
    return parser


def add_run_flags(parser):
    """--restart and --patience: how a run in --output-dir starts and stops."""
    parser.add_argument(
        "--restart",
        action="store_true",
        help="discard the run in --output-dir (backup, history, stage) and "
        "train from scratch; also trains a finished run again",
    )
    parser.add_argument(
        "--patience",
        type=positive_int,
        default=None,
        help="stop once the validation score has not improved for this many "
        "epochs (default: train every epoch)",
    )


def prepare_output_dir(parser, path):
    """Creates `path` (and its parents) or checks that it is a writable
    directory, before any work starts; a problem is a flag error."""
    path = pathlib.Path(path).expanduser()
    if path.exists() and not path.is_dir():
        parser.error(f"--output-dir {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        # os.access misreports for root and on some mounts: write a file.
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as error:
        parser.error(f"--output-dir {path} is not writable: {error.strerror}")
    return path


def flag_given(argv, flag):
    """Whether `flag` (e.g. "--epochs") is on the command line, so --fast
    can shrink only what the user left at its default."""
    argv = sys.argv[1:] if argv is None else argv
    return any(arg == flag or arg.startswith(flag + "=") for arg in argv)


# What --fast sets in the language-model programs: a model and corpus
# small enough for a smoke run of every step.
LANGUAGE_MODEL_FAST = {
    "num_layers": 1,
    "hidden_dim": 32,
    "intermediate_dim": 64,
    "attention_dim": 8,
    "sequence_length": 32,
    "vocabulary_size": 300,
    "documents": 12,
}


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
    if args.vocabulary_size < 50:
        parser.error(
            f"--vocabulary-size must be at least 50; received {args.vocabulary_size}"
        )


def add_optimizer_flags(parser):
    """--dropout, --learning-rate and --weight-decay of the language-model
    programs."""
    parser.add_argument("--dropout", type=unit_float, default=0.1, help="dropout rate")
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        default=1e-3,
        help="peak AdamW learning rate (linear warm-up, cosine decay)",
    )
    parser.add_argument(
        "--weight-decay",
        type=non_negative_float,
        default=0.01,
        help="AdamW weight decay",
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
# The corpus flags of the language-model programs, likewise.
CORPUS_RUN_FLAGS = (
    "dataset",
    "text_feature",
    "vocabulary",
    "vocabulary_sample",
    "heldout_fraction",
)


def add_quantize_flag(parser, served):
    """--quantize: `Model.quantize` on a copy of the model that `served`
    names; the trained model and its files stay float."""
    parser.add_argument(
        "--quantize",
        choices=("int8", "float8"),
        help=f"quantize {served} (Model.quantize: Dense and embedding kernels; "
        "norms and the spatial gating unit stay float) and report its score "
        "beside float32's",
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
        "--dtype-policy",
        choices=DTYPE_POLICIES,
        default="float32",
        help="Keras dtype policy: mixed precision computes in bfloat16 or "
        "float16 with float32 weights",
    )
    from .distribute import add_distribute_flags

    add_distribute_flags(parser.add_argument_group("devices and hosts"), True)


def check_step_flags(parser, args, argv):
    """The step flags' checks that need no data, as flag errors."""
    from .distribute import check_distribute_flags

    check_distribute_flags(parser, args)
    if args.steps is not None and flag_given(argv, "--epochs"):
        parser.error("--steps and --epochs both set the length of training: give one")
    if args.eval_every and args.save_every and args.eval_every % args.save_every:
        parser.error(
            f"--save-every {args.save_every} must divide --eval-every "
            f"{args.eval_every}, so that every evaluation has a checkpoint"
        )


def add_text_file_flags(parser, with_vocabulary=True):
    """--train-files, --validation-files, --test-files and, with
    `with_vocabulary`, the vocabulary flags; --shuffle-buffer."""
    group = parser.add_argument_group("local text files")
    for part, note in (
        ("train", "the documents to train on"),
        (
            "validation",
            "held-out documents that choose the checkpoint "
            "(default: carved from the train files)",
        ),
        (
            "test",
            "held-out documents scored once (default: carved from the train files)",
        ),
    ):
        group.add_argument(
            f"--{part}-files",
            metavar="GLOB",
            help=f"{note}: UTF-8 text files (.txt, or .gz), a blank line "
            "between documents; quote the glob",
        )
    group.add_argument(
        "--shuffle-buffer",
        type=positive_int,
        default=10000,
        help="documents (and windows) shuffled together: the memory that "
        "shuffling takes",
    )
    if with_vocabulary:
        group.add_argument(
            "--vocabulary",
            metavar="FILE",
            help="a WordPiece vocabulary, one word piece a line with BERT's "
            "special tokens (vocab.txt), instead of training one",
        )
        group.add_argument(
            "--vocabulary-sample",
            type=positive_int,
            default=100000,
            help="most train documents the vocabulary is trained on",
        )


def check_text_file_flags(parser, args):
    """--validation-files and --test-files need --train-files, and the
    files exclude --dataset."""
    if getattr(args, "dataset", None) and args.train_files:
        parser.error("--train-files and --dataset both choose the corpus: give one")
    for part in ("validation", "test"):
        if getattr(args, f"{part}_files") and not args.train_files:
            parser.error(f"--{part}-files needs --train-files")


def add_corpus_flags(parser, default_corpus):
    """--dataset (a tensorflow-datasets text corpus, streamed), its
    --data-dir and --text-feature, the local text files, and the share of
    documents held out where a corpus has no such split."""
    parser.add_argument(
        "--heldout-fraction",
        type=fraction,
        default=0.1,
        help="share of documents held out for validation and again for test "
        "(where the corpus has no such split)",
    )
    parser.add_argument(
        "--dataset",
        help=f"a tensorflow-datasets text corpus (e.g. wikipedia/20230601.en, "
        f"c4) instead of {default_corpus}, read as a stream",
    )
    parser.add_argument(
        "--data-dir", help="where tensorflow-datasets keeps prepared datasets"
    )
    parser.add_argument(
        "--text-feature",
        help="the --dataset feature holding the text (default: 'text', "
        "or its only text feature)",
    )
    add_text_file_flags(parser)


def check_corpus_flags(parser, args):
    """The corpus flags' checks, as flag errors."""
    if (args.data_dir or args.text_feature) and not args.dataset:
        parser.error("--data-dir and --text-feature need --dataset")
    check_text_file_flags(parser, args)
