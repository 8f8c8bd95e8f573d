"""The edge values of every numeric flag of the four programs, parsed in
this process (the programs parse flags before they import Keras): the
values at each edge of the allowed range are accepted as given, and the
first values past it are refused with a usage error naming the flag.
Also the edges of the checks between flags. Parsing only, no training.

The numeric flags are listed here by hand with the range their help
states; a test checks that the list names every numeric flag the
programs have, so a new one cannot go untested."""

import importlib

import pytest
from _shared import flag_values as shared_flags

# Parsing does not depend on KERAS_BACKEND: CI runs these once.
pytestmark = pytest.mark.backend_independent

PROGRAMS = (
    "pretrain_mlm",
    "train_causal_lm",
    "finetune_text_classifier",
    "train_image_classifier",
    "tokenize_corpus",
)

# Each kind of range: {accepted text: parsed value}, refused texts.
RANGES = {
    "at least 1": ({"1": 1, "7": 7}, ["0", "-1", "2.5", "one"]),
    "at least 0": ({"0": 0, "3": 3}, ["-1", "0.5"]),
    "seed": ({"0": 0, str(2**32 - 1): 2**32 - 1}, ["-1", str(2**32)]),
    "above 0": ({"1e-9": 1e-9, "3": 3.0}, ["0", "-0.0", "-1e-9", "nan", "inf"]),
    "0 or more": ({"0": 0.0, "2.5": 2.5}, ["-1e-9", "inf", "nan"]),
    "in [0, 1)": ({"0": 0.0, "0.999": 0.999}, ["1", "-0.001", "nan"]),
    "in (0, 1)": ({"0.001": 0.001, "0.999": 0.999}, ["0", "1", "nan"]),
}
COMMON = {
    "--epochs": "at least 1",
    "--batch-size": "at least 1",
    "--seed": "seed",
    "--patience": "at least 1",
    "--model-shards": "at least 1",
    "--num-processes": "at least 1",
    "--process-id": "at least 0",
}
STEPS = {
    "--steps": "at least 1",
    "--warmup-steps": "at least 0",
    "--eval-every": "at least 1",
    "--save-every": "at least 1",
    "--eval-batches": "at least 1",
    "--input-shards": "at least 1",
    "--shuffle-buffer": "at least 1",
    "--log-every-steps": "at least 1",
    "--log-every-s": "above 0",
}
LANGUAGE_MODEL = {
    **COMMON,
    **STEPS,
    "--num-layers": "at least 1",
    "--hidden-dim": "at least 1",
    "--intermediate-dim": "even",
    "--attention-dim": "at least 1",
    "--sequence-length": "at least 8",
    "--vocabulary-size": "at least 50",
    "--dropout": "in [0, 1)",
    "--learning-rate": "above 0",
    "--weight-decay": "0 or more",
    "--heldout-fraction": "in (0, 1)",
    "--vocabulary-sample": "at least 1",
    "--vocabulary-sample-bytes": "at least 1",
}
NUMERIC_FLAGS = {
    "tokenize_corpus": {
        "--heldout-fraction": "in (0, 1)",
        "--vocabulary-size": "at least 50",
        "--vocabulary-sample": "at least 1",
        "--vocabulary-sample-bytes": "at least 1",
        "--shard-tokens": "at least 1",
    },
    "pretrain_mlm": LANGUAGE_MODEL,
    "train_causal_lm": {**LANGUAGE_MODEL, "--max-length": "at least 1"},
    "finetune_text_classifier": {
        **COMMON,
        **STEPS,
        "--learning-rate": "above 0",
        "--weight-decay": "0 or more",
        "--dropout": "in [0, 1)",
        "--lora-rank": "at least 1",
        "--test-fraction": "in (0, 1)",
        "--pairs-per-paragraph": "at least 1",
    },
    "train_image_classifier": {
        **COMMON,
        "--depth": "at least 1",
        "--width": "at least 1",
        "--patch-size": "patch",
        "--ffn-ratio": "at least 1",
        "--image-size": "image",
        "--lora-rank": "at least 1",
        "--drop-path-rate": "in [0, 1)",
        "--learning-rate": "above 0",
        "--warmup-steps": "at least 0",
        "--weight-decay": "0 or more",
        "--adam-epsilon": "above 0",
        "--clip-norm": "above 0",
        "--ema-momentum": "in [0, 1)",
        "--label-smoothing": "in [0, 1)",
        "--mixup": "0 or more",
        "--cutmix": "0 or more",
        "--randaugment": "at least 0",
        "--randaugment-magnitude": "in [0, 1)",
        "--random-resized-crop": "in [0, 1)",
    },
}
# Ranges that a check after parsing narrows, with the default sizes (a
# sequence of 64 tokens; 16x16 images in 4x4 patches).
RANGES.update(
    {
        "even": ({"2": 2, "8": 8}, ["0", "1", "7", "-2"]),
        "at least 8": ({"8": 8, "9": 9}, ["7", "0"]),
        "at least 50": ({"50": 50}, ["49", "0"]),
        "patch": ({"1": 1, "16": 16}, ["0", "3", "32"]),
        "image": ({"4": 4, "8": 8}, ["0", "6"]),
    }
)
# What makes a flag's accepted values valid: the flags it needs.
MULTI_PROCESS = ["--distribute", "data", "--num-processes", "8"]
MULTI_PROCESS += ["--coordinator", "host:1"]
TWO_PROCESSES = ["--distribute", "data", "--num-processes", "2"]
TWO_PROCESSES += ["--process-id", "1", "--coordinator", "h:1"]
CONTEXT = {
    "--model-shards": ["--distribute", "model"],
    "--process-id": MULTI_PROCESS,
    "--attention-dim": ["--model", "amlp"],
}
# Where the accepted values differ from their range's: 7 processes or
# input shards do not divide the default batch of 32 or 64.
ACCEPTED = {
    ("--num-processes", "at least 1"): {"1": 1},
    ("--input-shards", "at least 1"): {"1": 1, "4": 4},
}


@pytest.fixture(autouse=True)
def no_distribution_environment(monkeypatch):
    """The multi-process flags default to Keras' environment variables."""
    for name in (
        "KERAS_DISTRIBUTION_JOB_ADDRESSES",
        "KERAS_DISTRIBUTION_NUM_PROCESSES",
        "KERAS_DISTRIBUTION_PROCESS_ID",
    ):
        monkeypatch.delenv(name, raising=False)


def parse(program, flags, tmp_path):
    """(parser, args) of `program` with `flags`, a fresh --output-dir and,
    for the text classifier, a --preset that passes its check."""
    argv = [*flags, "--output-dir", str(tmp_path / "out")]
    if program == "finetune_text_classifier":
        preset = tmp_path / "preset"
        preset.mkdir(exist_ok=True)
        (preset / "config.json").write_text("{}")
        argv += ["--preset", str(preset)]
    if program == "train_image_classifier" and "--lora-rank" in " ".join(flags):
        argv += ["--model", "gmlp_s16", "--weights", "imagenet"]
    return importlib.import_module(program).parse_args(argv)


def refusal(program, flags, tmp_path, capsys):
    """The last line of the usage error that `flags` give (exit status 2)."""
    with pytest.raises(SystemExit) as raised:
        parse(program, flags, tmp_path)
    assert raised.value.code == 2, flags
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "program, flag",
    [(program, flag) for program in PROGRAMS for flag in NUMERIC_FLAGS[program]],
)
def test_numeric_flag_edges(program, flag, tmp_path, capsys):
    kind = NUMERIC_FLAGS[program][flag]
    accepted, refused = RANGES[kind]
    accepted = ACCEPTED.get((flag, kind), accepted)
    context = CONTEXT.get(flag, [])
    destination = flag[2:].replace("-", "_")
    for text, value in accepted.items():
        _, args = parse(program, [*context, f"{flag}={text}"], tmp_path)
        assert getattr(args, destination) == value, (flag, text)
    for text in refused:
        message = refusal(program, [*context, f"{flag}={text}"], tmp_path, capsys)
        assert names(flag, message), (text, message)


def names(flag, message):
    """Whether a usage error names `flag` (or, as the image size's check
    does, what it sets: "--patch-size" as "patch size")."""
    return flag in message or flag[2:].replace("-", " ") in message


def numeric_flags_of(parser):
    """The flags of `parser` that take a number."""
    numeric = {int, float}
    numeric |= {
        getattr(shared_flags, name)
        for name in (
            "positive_int",
            "non_negative_int",
            "seed_int",
            "positive_float",
            "non_negative_float",
            "unit_float",
            "fraction",
        )
    }
    return {
        action.option_strings[-1]
        for action in parser._actions
        if action.type in numeric
    }


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_numeric_flag_is_listed(program, tmp_path):
    parser, _ = parse(program, [], tmp_path)
    assert numeric_flags_of(parser) == set(NUMERIC_FLAGS[program])


@pytest.mark.parametrize(
    "program, flags, refused_flags",
    [
        # The generated length is at most the sequence length.
        (
            "train_causal_lm",
            ["--sequence-length", "20", "--max-length", "20"],
            ["--max-length", "21"],
        ),
        # A checkpoint at every evaluation: --save-every divides --eval-every.
        (
            "pretrain_mlm",
            ["--eval-every", "6", "--save-every", "6"],
            ["--save-every", "4"],
        ),
        (
            "finetune_text_classifier",
            ["--eval-every", "6", "--save-every", "3"],
            ["--save-every", "5"],
        ),
        # Each input shard gives an equal part of the global batch.
        (
            "train_causal_lm",
            ["--input-shards", "3", "--batch-size", "3"],
            ["--batch-size", "4"],
        ),
        # A process index below the number of processes.
        ("pretrain_mlm", [*MULTI_PROCESS, "--process-id", "7"], ["--process-id", "8"]),
        # Whole patches: one patch of the image is the smallest.
        (
            "train_image_classifier",
            ["--image-size", "8", "--patch-size", "8"],
            ["--patch-size", "9"],
        ),
        # Each process takes an equal part of the global batch.
        (
            "train_image_classifier",
            [*TWO_PROCESSES, "--batch-size", "2"],
            ["--batch-size", "3"],
        ),
    ],
)
def test_edges_between_flags(program, flags, refused_flags, tmp_path, capsys):
    """`flags` sit at the edge the check allows; replacing one of them with
    `refused_flags` crosses it."""
    _, args = parse(program, flags, tmp_path)
    flag, value = refused_flags
    assert (
        str(getattr(args, flag[2:].replace("-", "_"))) == flags[flags.index(flag) + 1]
    )
    message = refusal(program, [*flags, *refused_flags], tmp_path, capsys)
    assert names(flag, message), message


def resolve(steps, warmup, every, tmp_path):
    """`resolve_steps` (the check of the step flags once the data has
    been counted) on the causal LM's flags, with --save-every and
    --eval-every both `every`."""
    from _text_training.training import resolve_steps

    parser, args = parse("train_causal_lm", ["--steps", str(steps)], tmp_path)
    args.warmup_steps, args.save_every, args.eval_every = warmup, every, every
    resolve_steps(parser, args, 10)
    return args


def test_warmup_up_to_the_steps_and_periods_that_divide_them(tmp_path, capsys):
    assert resolve(12, 12, 4, tmp_path).warmup_steps == 12
    with pytest.raises(SystemExit):
        resolve(12, 13, 4, tmp_path)
    assert "--warmup-steps 13 must be at most" in capsys.readouterr().err
    assert resolve(12, 0, 12, tmp_path).save_every == 12
    with pytest.raises(SystemExit):
        resolve(12, 0, 5, tmp_path)
    assert "--save-every 5 must divide --steps 12" in capsys.readouterr().err


def test_tokenize_corpus_says_and_checks_its_own_flags(tmp_path, capsys):
    """tokenize_corpus.py's flags: --help says what each of its own takes
    and its default; --fast trains at most 300 word pieces unless fewer are
    asked; a corpus flag that needs another and an --output-dir that is a
    file are flag errors."""
    parser, args = parse("tokenize_corpus", [], tmp_path)
    assert (args.vocabulary_size, args.shard_tokens) == (1200, 2**24)
    shown = " ".join(parser.format_help().split())
    for text in (
        "--output-dir OUTPUT_DIR where the outputs go; rerunning with the same "
        "directory resumes an interrupted run (default: outputs/tokenize_corpus)",
        "--dataset DATASET a tensorflow-datasets text corpus (e.g. "
        "wikipedia/20230601.en, c4) instead of the Python reference, read as a "
        "stream",
        "--vocabulary-size VOCABULARY_SIZE WordPiece vocabulary size to train (a "
        "small corpus may give fewer) (default: 1200)",
        "--shard-tokens SHARD_TOKENS token ids per shard (a shard ends at a "
        "document's end past it) (default: 16777216)",
    ):
        assert text in shown, text
    assert parse("tokenize_corpus", ["--fast"], tmp_path)[1].vocabulary_size == 300
    given = ["--fast", "--vocabulary-size", "100"]
    assert parse("tokenize_corpus", given, tmp_path)[1].vocabulary_size == 100
    message = refusal("tokenize_corpus", ["--text-feature", "text"], tmp_path, capsys)
    assert message.endswith("error: --data-dir and --text-feature need --dataset")
    taken = tmp_path / "a-file"
    taken.write_text("")
    with pytest.raises(SystemExit) as raised:
        importlib.import_module("tokenize_corpus").parse_args(
            ["--output-dir", str(taken)]
        )
    assert raised.value.code == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.endswith(
        f"error: --output-dir {taken} exists and is not a directory"
    )
