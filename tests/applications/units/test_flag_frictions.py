"""A new user's flag frictions, each fixed: no abbreviations, "did you
mean" for a misspelled flag, a refused start that leaves no --output-dir it
created, contradicting flags refused before any data, and `--help`'s
examples printed as written. Flag parsing only, no training."""

import importlib
import re
import subprocess
import sys

import pytest
from _shared import flag_parser
from _shared.interrupt import run
from _shared.run_state import open_run
from _text_input.errors import refuse

from tests.applications.units.test_flag_edges import PROGRAMS
from tests.applications.units.test_flag_edges import parse

pytestmark = pytest.mark.backend_independent


# An abbreviation of a flag of each program, and the flag.
ABBREVIATED = {program: ("--epoch", "--epochs") for program in PROGRAMS}
ABBREVIATED["tokenize_corpus"] = ("--shard-token", "--shard-tokens")


@pytest.mark.parametrize("program", PROGRAMS)
def test_an_abbreviation_is_refused_with_the_flag_it_meant(program, tmp_path, capsys):
    short, meant = ABBREVIATED[program]
    with pytest.raises(SystemExit) as raised:
        parse(program, [short, "1"], tmp_path)
    assert raised.value.code == 2
    error = capsys.readouterr().err
    assert f"unrecognized arguments: {short} 1" in error
    assert f"{short}: did you mean {meant}?" in error


def test_a_benchmark_suggests_the_flag_it_meant():
    benchmark = "benchmarks/generation.py"
    result = subprocess.run(
        [sys.executable, benchmark, "--backend", "jax"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "--backend: did you mean --backends?" in result.stderr


def test_a_refused_start_removes_the_output_dir_it_created(tmp_path):
    parse("pretrain_mlm", [], tmp_path / "new")
    created = tmp_path / "new" / "out"
    assert created.is_dir()
    (created / "vocabulary.txt").write_text("[PAD]\n")
    with pytest.raises(SystemExit):
        refuse("--train-files: 'corpus/*' matches no file")
    assert not (tmp_path / "new").exists()


def test_a_refused_start_keeps_a_directory_that_existed(tmp_path):
    (tmp_path / "out").mkdir()
    _, args = parse("train_causal_lm", [], tmp_path)
    with pytest.raises(SystemExit):
        run(lambda: sys.exit("error: --dataset: unknown name"))
    assert args.output_dir.is_dir()


def test_a_begun_run_keeps_its_output_dir(tmp_path):
    from _causal_lm import recipe

    _, args = parse("train_causal_lm", [], tmp_path)
    open_run(args, recipe.MODEL_FLAGS).begin()
    with pytest.raises(SystemExit):
        run(lambda: sys.exit(2))
    assert (args.output_dir / "run_state.json").is_file()
    flag_parser.discard_created_output_dir()  # nothing is left to discard
    assert args.output_dir.is_dir()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--steps", "2"], "--warmup-steps 10000 must be at most the 2 steps"),
        (["--steps", "2", "--warmup-steps", "0"], "--save-every 1000 must divide"),
    ],
)
def test_the_paper_recipe_is_refused_before_any_data(flags, message, tmp_path, capsys):
    """--recipe paper's 10,000 warm-up steps (and checkpoint every 1,000)
    against --steps 2: a flag error at once, and no --output-dir made."""
    with pytest.raises(SystemExit):
        parse(
            "pretrain_mlm",
            ["--model", "gmlp_base", "--recipe", "paper", *flags],
            tmp_path,
        )
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_prints_each_example_as_written(program, capsys):
    """A continued example line ends in a backslash, and no example runs
    two lines into one (as a docstring's unescaped backslash does)."""
    with pytest.raises(SystemExit):
        importlib.import_module(program).parse_args(["--help"])
    lines = capsys.readouterr().out.splitlines()
    examples = [line for line in lines if re.search(r"python3? applications/", line)]
    assert examples, program
    for line in examples:
        assert not re.search(r"\S {4,}--", line.split("#")[0]), line
