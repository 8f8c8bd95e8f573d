"""Which value wins where two sources give one: a flag on the command line
over Keras' KERAS_DISTRIBUTION_* environment variables (each variable
filling in only the flag not given), and an explicit flag over the
pretraining program's --recipe paper, whose other values are the paper's
(written out here from Liu et al. 2021 and BERT). Parsing only."""

import importlib

import pytest

# Parsing does not depend on KERAS_BACKEND: CI runs these once.
pytestmark = pytest.mark.backend_independent

ENVIRONMENT = {
    "KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234",
    "KERAS_DISTRIBUTION_NUM_PROCESSES": "4",
    "KERAS_DISTRIBUTION_PROCESS_ID": "3",
}
PROCESS_FLAGS = ("coordinator", "num_processes", "process_id")


def parse(program, flags, tmp_path):
    argv = [*flags, "--output-dir", str(tmp_path / "out")]
    if program == "finetune_text_classifier":
        preset = tmp_path / "preset"
        preset.mkdir(exist_ok=True)
        (preset / "config.json").write_text("{}")
        argv += ["--preset", str(preset)]
    return importlib.import_module(program).parse_args(argv)[1]


@pytest.mark.parametrize(
    "program", ["pretrain_mlm", "train_causal_lm", "finetune_text_classifier"]
)
@pytest.mark.parametrize(
    "flags, expected",
    [
        # All three given: the environment is not read.
        (
            ["--coordinator", "127.0.0.1:99", "--num-processes", "2"]
            + ["--process-id", "1"],
            ("127.0.0.1:99", 2, 1),
        ),
        # One given: the other two from the environment.
        (["--process-id", "0"], ("10.0.0.1:1234", 4, 0)),
        (["--num-processes", "8"], ("10.0.0.1:1234", 8, 3)),
        ([], ("10.0.0.1:1234", 4, 3)),
    ],
)
def test_flags_win_over_the_distribution_environment(
    program, flags, expected, monkeypatch, tmp_path
):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    args = parse(program, ["--distribute", "data", *flags], tmp_path)
    assert tuple(getattr(args, name) for name in PROCESS_FLAGS) == expected
    if program != "finetune_text_classifier":
        # One input shard per process, of the processes the flags say.
        assert args.input_shards == expected[1]


def test_a_flag_of_a_bad_environment_variable_is_not_read(monkeypatch, tmp_path):
    """The variable a flag replaces may hold anything."""
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "four")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "-1")
    flags = ["--distribute", "data", "--num-processes", "1", "--process-id", "0"]
    args = parse("pretrain_mlm", flags, tmp_path)
    assert (args.num_processes, args.process_id) == (1, 0)


# The paper's pretraining recipe: batch 256 of 512 tokens for 1M steps
# (Liu et al. 2021, section 4); BERT's optimizer (peak 1e-4 after 10,000
# warm-up steps, weight decay 0.01) and its 30,522 word pieces; an
# evaluation every 10,000 steps and a checkpoint every 1,000.
PAPER = {
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
EXPLICIT = {
    "--batch-size": ("batch_size", "64", 64),
    "--sequence-length": ("sequence_length", "128", 128),
    "--vocabulary-size": ("vocabulary_size", "8000", 8000),
    "--warmup-steps": ("warmup_steps", "500", 500),
    "--eval-every": ("eval_every", "2000", 2000),
    "--save-every": ("save_every", "500", 500),
    "--steps": ("steps", "20000", 20000),
    "--learning-rate": ("learning_rate", "3e-4", 3e-4),
}


def test_the_paper_recipe_gives_the_paper_values(tmp_path):
    args = parse(
        "pretrain_mlm", ["--model", "gmlp_base", "--recipe", "paper"], tmp_path
    )
    assert {name: getattr(args, name) for name in PAPER} == PAPER


@pytest.mark.parametrize("flag", list(EXPLICIT))
def test_a_flag_given_wins_over_the_paper_recipe(flag, tmp_path):
    name, text, value = EXPLICIT[flag]
    flags = ["--model", "gmlp_base", "--recipe", "paper", flag, text]
    args = parse("pretrain_mlm", flags, tmp_path)
    assert {n: getattr(args, n) for n in PAPER} == {**PAPER, name: value}


def test_every_flag_given_wins_over_the_paper_recipe(tmp_path):
    flags = ["--model", "gmlp_base", "--recipe", "paper"]
    for flag, (_, text, _) in EXPLICIT.items():
        flags += [flag, text]
    args = parse("pretrain_mlm", flags, tmp_path)
    given = {name: value for name, _, value in EXPLICIT.values()}
    assert {n: getattr(args, n) for n in PAPER} == {**PAPER, **given}
