"""The fine-tuning program's flags: the preset, the task (offline,
tensorflow-datasets or local files) and its splits, the optimizer, LoRA and
steps, with the checks on them. Standard library only, so `--help` and flag
errors answer before Keras is imported."""

import pathlib

from _shared.commands import python_command
from _shared.flag_values import fraction
from _shared.flag_values import positive_int
from _shared.flag_values import unit_float
from _shared.flags import add_quantize_base_flag
from _shared.flags import check_quantize_base
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _text_input.flags import add_text_file_flags
from _text_input.flags import check_text_file_flags
from _text_training.flags import STEP_RUN_FLAGS
from _text_training.flags import add_adamw_flags
from _text_training.flags import add_step_flags
from _text_training.flags import check_step_flags

DEFAULT_PRESET = "outputs/pretrain_mlm/final_preset"
# tensorflow-datasets tasks: (text features, split to score on).
TASKS = {
    "glue/sst2": (("sentence",), "validation"),
    "glue/cola": (("sentence",), "validation"),
    "glue/mnli": (("premise", "hypothesis"), "validation_matched"),
    "glue/qnli": (("question", "sentence"), "validation"),
    "glue/rte": (("sentence1", "sentence2"), "validation"),
    "glue/mrpc": (("sentence1", "sentence2"), "validation"),
    "imdb_reviews": (("text",), "test"),
    "ag_news_subset": (("description",), "test"),
}
OFFLINE_TASKS = ("package", "same-module", "same-package")
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "preset",
    "dataset",
    "dropout",
    "lora_rank",
    "quantize_base",
    "offline_task",
    "pairs_per_paragraph",
    "test_fraction",
    "fast",
    *STEP_RUN_FLAGS,
)


def add_task_flags(parser):
    """The flags that choose the task and its splits."""
    parser.add_argument(
        "--dataset",
        help="a tensorflow-datasets task instead of the offline one, "
        f"e.g. {', '.join(TASKS)}",
    )
    parser.add_argument(
        "--data-dir", help="where tensorflow-datasets keeps prepared datasets"
    )
    parser.add_argument(
        "--offline-task",
        choices=OFFLINE_TASKS,
        default=OFFLINE_TASKS[0],
        help="the offline task: which package a paragraph comes from, or "
        "whether two paragraphs come from the same module file or package "
        "(sentence pairs)",
    )
    parser.add_argument(
        "--pairs-per-paragraph",
        type=positive_int,
        default=1,
        help="the pair tasks' pairs per first paragraph, 'same' and 'other' "
        "in turn, each with another second paragraph while one is left",
    )
    parser.add_argument(
        "--test-fraction",
        type=fraction,
        default=0.25,
        help="share of paragraphs held out for test in the offline task (half "
        "as many validate; whole module files); share of --dataset's train "
        "examples kept for validation",
    )


def parse_args(doc, argv=None):
    """(parser, flags) of the program whose docstring is `doc`, with
    --fast applied and every flag checked."""
    parser = make_parser(doc, "outputs/finetune_text_classifier")
    parser.set_defaults(epochs=6, batch_size=32)
    parser.add_argument(
        "--preset",
        default=DEFAULT_PRESET,
        help="the pretrained preset directory to start from",
    )
    add_task_flags(parser)
    add_adamw_flags(parser, 5e-4)
    parser.add_argument(
        "--dropout", type=unit_float, default=0.1, help="dropout on the pooled output"
    )
    parser.add_argument(
        "--lora-rank",
        type=positive_int,
        help="fine-tune LoRA factors of this rank on the encoder's channel "
        "projections (backbone.enable_lora) and the head, the other encoder "
        "weights frozen (default: every weight trains)",
    )
    add_quantize_base_flag(parser, "the encoder")
    add_text_file_flags(parser, with_vocabulary=False)
    add_step_flags(parser)
    args = parser.parse_args(argv)
    if args.fast and not flag_given(argv, "--epochs"):
        args.epochs = 1
    if args.data_dir and not args.dataset:
        parser.error("--data-dir needs --dataset")
    check_quantize_base(parser, args)
    check_text_file_flags(parser, args)
    check_step_flags(parser, args, argv)
    args.preset = checked_preset(parser, args.preset)
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args


def checked_preset(parser, path):
    """The --preset directory, or a usage error saying how to make one."""
    preset = pathlib.Path(path).expanduser()
    if not (preset / "config.json").is_file():
        made_by = python_command("applications/pretrain_mlm.py")
        if preset.name in ("final_preset", "best_preset"):
            made_by += f" --output-dir {preset.parent}"
        state = (
            "does not exist"
            if not preset.exists()
            else "holds no preset (no config.json)"
        )
        parser.error(
            f"--preset {preset} {state}. Make it first with: {made_by}  "
            "(or pass --preset DIR of another gMLP/aMLP preset)"
        )
    return preset
