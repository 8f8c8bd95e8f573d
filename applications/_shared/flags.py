"""The flags every program takes, parsed before Keras is imported.

Flags are parsed and the output directory is checked here, with nothing
heavier than the standard library loaded, so `--help` and flag errors answer
at once.
"""

import argparse
import pathlib
import sys
import tempfile

from .flag_parser import FlagParser
from .flag_parser import note_created_output_dir
from .flag_values import positive_int
from .flag_values import seed_int

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


def make_parser(doc, default_output_dir, training=True):
    """An ArgumentParser whose description is the program's docstring, with
    the flags every program takes: --output-dir and --fast, and with
    `training` those of a training run."""
    summary, _, details = doc.strip().partition("\n")
    parser = FlagParser(
        description=summary,
        epilog=details.strip(),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--output-dir",
        default=default_output_dir,
        help=(
            "where models, history, plots and the summary go"
            if training
            else "where the outputs go"
        )
        + "; rerunning with the same directory resumes an interrupted run",
    )
    parser.add_argument("--fast", action="store_true", help=FAST_HELP)
    if not training:
        return parser
    parser.add_argument(
        "--epochs", type=positive_int, default=None, help="training epochs"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=None, help="batch size"
    )
    parser.add_argument("--seed", type=seed_int, default=0, help="random seed")
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
    directory, before any work starts; a problem is a flag error. A start
    refused later removes what this created (`flag_parser`)."""
    path = pathlib.Path(path).expanduser()
    if path.exists() and not path.is_dir():
        parser.error(f"--output-dir {path} exists and is not a directory")
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
        note_created_output_dir(missing[-1] if missing else None)
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


def add_quantize_base_flag(parser, frozen):
    """--quantize-base: with --lora-rank, `frozen` (the weights LoRA leaves
    frozen) quantized before the factors are added: QLoRA's recipe."""
    parser.add_argument(
        "--quantize-base",
        choices=("int8",),
        help=f"with --lora-rank: quantize {frozen} first (Model.quantize), so "
        "the float LoRA factors train beside int8 kernels (QLoRA's recipe); "
        "the saved model holds each kernel merged with its factors, quantized "
        "again",
    )


def check_quantize_base(parser, args):
    """--quantize-base needs --lora-rank (a fully trained model cannot train
    int8 kernels), and leaves nothing for --quantize to do."""
    if args.quantize_base is None:
        return
    if args.lora_rank is None:
        parser.error(
            "--quantize-base: int8 kernels do not train; it needs --lora-rank "
            "(LoRA factors beside the quantized weights)"
        )
    if getattr(args, "quantize", None) is not None:
        parser.error(
            f"--quantize {args.quantize}: the model is already quantized "
            f"(--quantize-base {args.quantize_base}); its test score is the "
            "quantized model's"
        )


def add_quantize_flag(parser, served, modes=("int8", "float8")):
    """--quantize: `Model.quantize` on a copy of the model that `served`
    names, in one of `modes`; the trained model and its files stay float."""
    parser.add_argument(
        "--quantize",
        choices=modes,
        help=f"quantize {served} (Model.quantize: Dense and embedding kernels; "
        "norms and the spatial gating unit stay float"
        + (
            "; gptq: 4-bit, calibrated block by block on train windows"
            if "gptq" in modes
            else ""
        )
        + ") and report its score beside float32's",
    )
