"""The programs' shared flag helpers (`applications/_shared/`), one by one:
the numeric types' refusals, word for word; "did you mean"; the output
directory a refused start removes; --help's defaults; the checks between
the quantization flags; the variant tables loaded without Keras; the
printed Python command; and --dataset's check against a stand-in for
tensorflow-datasets (its names, its builder's errors, the network probe).
Every expectation is written out here by hand. No training, no Keras
objects: milliseconds each."""

import argparse
import errno
import os
import pathlib
import socket
import sys
import tempfile
import types

import pytest
from _shared import commands
from _shared import flag_parser
from _shared import flag_values
from _shared import flags
from _shared import tfds_names
from _shared import variants

pytestmark = pytest.mark.backend_independent


# (type, text, the whole refusal).
REFUSED = [
    (flag_values.positive_int, "0", "must be at least 1, received '0'"),
    (flag_values.positive_int, "2.5", "expected an integer, received '2.5'"),
    (flag_values.positive_int, "inf", "expected an integer, received 'inf'"),
    (flag_values.non_negative_int, "-1", "must be >= 0, received '-1'"),
    (flag_values.seed_int, "-1", "must be in [0, 2**32), received '-1'"),
    (
        flag_values.seed_int,
        "4294967296",
        "must be in [0, 2**32), received '4294967296'",
    ),
    (flag_values.positive_float, "0", "must be above 0, received '0'"),
    (flag_values.positive_float, "one", "expected a number, received 'one'"),
    (flag_values.positive_float, "inf", "expected a finite number, received 'inf'"),
    (flag_values.positive_float, "nan", "expected a finite number, received 'nan'"),
    (flag_values.non_negative_float, "-1e-9", "must be >= 0, received '-1e-9'"),
    (
        flag_values.non_negative_float,
        "-inf",
        "expected a finite number, received '-inf'",
    ),
    (flag_values.unit_float, "1", "must be in [0, 1), received '1'"),
    (flag_values.unit_float, "-0.5", "must be in [0, 1), received '-0.5'"),
    (flag_values.fraction, "0", "must be in (0, 1), both excluded, received '0'"),
    (flag_values.fraction, "1.0", "must be in (0, 1), both excluded, received '1.0'"),
]


@pytest.mark.parametrize("kind, text, message", REFUSED)
def test_a_numeric_flag_refuses_with_its_whole_message(kind, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        kind(text)
    assert str(raised.value) == message
    # The parse error alone: not "During handling of ... another exception".
    assert raised.value.__suppress_context__ or raised.value.__context__ is None


def test_a_numeric_flag_keeps_the_type_of_what_it_parsed():
    assert flag_values.positive_float("3") == 3.0
    assert isinstance(flag_values.positive_float("3"), float)
    assert isinstance(flag_values.seed_int("7"), int)


def small_parser(**kwargs):
    parser = flag_parser.FlagParser(prog="demo", **kwargs)
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--seed", type=int)
    return parser


def test_did_you_mean_names_the_flag_of_each_misspelled_one():
    parser = small_parser()
    unrecognized = "unrecognized arguments: --epoch 3 --batch=4 epochs --zzz"
    assert flag_parser.did_you_mean(parser, unrecognized) == (
        f"{unrecognized}; --epoch: did you mean --epochs?; "
        "--batch: did you mean --batch-size?"
    )
    # Only unrecognized flags get a hint; other errors are left as they are.
    other = "argument --epoch: expected one argument"
    assert flag_parser.did_you_mean(parser, other) == other
    assert flag_parser.did_you_mean(parser, "unrecognized arguments: --q") == (
        "unrecognized arguments: --q"
    )


def test_a_flag_error_is_a_short_usage_and_the_reason(capsys):
    parser = small_parser()
    with pytest.raises(SystemExit) as raised:
        parser.parse_args(["--epoch", "3"])
    assert raised.value.code == 2
    assert capsys.readouterr().err == (
        "usage: demo [flags] (--help lists them)\n"
        "demo: error: unrecognized arguments: --epoch 3; "
        "--epoch: did you mean --epochs?\n"
    )


def test_a_parser_takes_argparses_arguments_as_argparse_does():
    parser = flag_parser.FlagParser("demo", "demo [flags]", "Trains a demo.")
    assert (parser.prog, parser.usage, parser.description) == (
        "demo",
        "demo [flags]",
        "Trains a demo.",
    )


def test_a_parser_may_allow_abbreviations_when_asked():
    assert small_parser(allow_abbrev=True).parse_args(["--epoch", "3"]).epochs == 3


def test_a_new_parser_forgets_a_directory_noted_before(tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    flag_parser.note_created_output_dir(str(made))
    small_parser()  # a second parse in the same process: another start
    flag_parser.discard_created_output_dir()
    assert made.is_dir()


def test_discarding_removes_the_noted_directory_once(tmp_path):
    made = tmp_path / "made"
    (made / "inside").mkdir(parents=True)
    flag_parser.note_created_output_dir(str(made))
    flag_parser.discard_created_output_dir()
    assert not made.exists()
    made.mkdir()
    flag_parser.discard_created_output_dir()
    assert made.is_dir()
    # A noted directory already gone is no error.
    flag_parser.note_created_output_dir(tmp_path / "gone")
    flag_parser.discard_created_output_dir()


DOC = """
    Trains a demo.

    Details, kept as written:
        python applications/demo.py --fast
"""


def help_of(parser):
    """--help's text with its whitespace runs made single spaces."""
    return " ".join(parser.format_help().split())


def test_a_program_parser_says_its_flags_and_their_defaults():
    parser = flags.make_parser(DOC, "outputs/demo")
    assert isinstance(parser, flag_parser.FlagParser)
    assert parser.description == "Trains a demo."
    assert parser.epilog == (
        "Details, kept as written:\n        python applications/demo.py --fast"
    )
    assert "\n        python applications/demo.py --fast" in parser.format_help()
    shown = help_of(parser)
    for text in (
        "-h, --help show this help message and exit --output-dir",
        "--output-dir OUTPUT_DIR where models, history, plots and the summary "
        "go; rerunning with the same directory resumes an interrupted run "
        "(default: outputs/demo) --fast",
        f"--fast {flags.FAST_HELP} --epochs",
        "--epochs EPOCHS training epochs --batch-size",
        "--batch-size BATCH_SIZE batch size --seed",
        "--seed SEED random seed (default: 0) --restart",
        "--restart discard the run in --output-dir (backup, history, stage) "
        "and train from scratch; also trains a finished run again --patience",
        "--patience PATIENCE stop once the validation score has not improved "
        "for this many epochs (default: train every epoch) Details",
    ):
        assert text in shown, text
    assert vars(parser.parse_args([])) == {
        "output_dir": "outputs/demo",
        "fast": False,
        "epochs": None,
        "batch_size": None,
        "seed": 0,
        "restart": False,
        "patience": None,
    }


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--epochs=0", "argument --epochs: must be at least 1, received '0'"),
        ("--batch-size=0", "argument --batch-size: must be at least 1, received '0'"),
        ("--patience=0", "argument --patience: must be at least 1, received '0'"),
        ("--seed=4294967296", "argument --seed: must be in [0, 2**32), received "),
    ],
)
def test_a_program_parser_checks_its_numbers(flag, message, capsys):
    with pytest.raises(SystemExit):
        flags.make_parser(DOC, "out").parse_args([flag])
    assert f"error: {message}" in capsys.readouterr().err


def test_a_parser_without_training_has_only_the_output_flags():
    parser = flags.make_parser(DOC, "outputs/demo", training=False)
    assert vars(parser.parse_args([])) == {"output_dir": "outputs/demo", "fast": False}
    assert "--output-dir OUTPUT_DIR where the outputs go; rerunning" in help_of(parser)


def test_help_states_a_default_once_and_only_for_an_optional_flag():
    parser = flags.make_parser(DOC, "out", training=False)
    parser.add_argument("--size", type=int, default=3, help="a size (default: three)")
    parser.add_argument("--count", type=int, default=5, help="a count")
    parser.add_argument("name", nargs="?", default="x", help="a name")
    shown = help_of(parser)
    assert "--size SIZE a size (default: three) --count" in shown
    assert shown.endswith(
        "--count COUNT a count (default: 5) Details, kept as written: "
        "python applications/demo.py --fast"
    )
    assert "positional arguments: name a name options:" in shown
    assert "SUPPRESS" not in shown


def test_the_output_dir_is_made_with_its_parents_and_noted(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    parser = flags.make_parser(DOC, "out")
    made = flags.prepare_output_dir(parser, "~/runs/first/out")
    assert made == tmp_path / "runs/first/out" and made.is_dir()
    assert list(made.iterdir()) == []  # the write check leaves nothing
    # A refused start removes the outermost directory it made.
    flag_parser.discard_created_output_dir()
    assert not (tmp_path / "runs").exists()
    # One that existed stays.
    (tmp_path / "kept").mkdir()
    flags.prepare_output_dir(parser, tmp_path / "kept")
    flag_parser.discard_created_output_dir()
    assert (tmp_path / "kept").is_dir()


def refusal(call, capsys):
    with pytest.raises(SystemExit) as raised:
        call()
    assert raised.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_an_output_dir_that_cannot_be_made_is_a_flag_error(tmp_path, capsys):
    parser = flags.make_parser(DOC, "out")
    (tmp_path / "a-file").write_text("")
    path = tmp_path / "a-file" / "out"
    message = refusal(lambda: flags.prepare_output_dir(parser, path), capsys)
    assert message == (
        f"{parser.prog}: error: --output-dir {path} is not writable: Not a directory"
    )


def test_an_output_dir_that_cannot_be_written_is_a_flag_error(
    tmp_path, monkeypatch, capsys
):
    """A directory where no file can be made (simulated: the tests run as
    root, whom permissions do not stop), and not the temporary folder."""
    unwritable = tmp_path / "read-only"
    unwritable.mkdir()
    opened = tempfile.NamedTemporaryFile

    def open_temporary(*args, dir=None, **kwargs):
        if dir is not None and pathlib.Path(dir) == unwritable:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return opened(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", open_temporary)
    parser = flags.make_parser(DOC, "out")
    message = refusal(lambda: flags.prepare_output_dir(parser, unwritable), capsys)
    assert message == (
        f"{parser.prog}: error: --output-dir {unwritable} is not writable: "
        "Permission denied"
    )


def test_a_flag_is_given_by_its_whole_name(monkeypatch):
    assert flags.flag_given(["--epochs", "3"], "--epochs")
    assert flags.flag_given(["--fast", "--epochs=3"], "--epochs")
    assert not flags.flag_given(["--epochs-max", "3", "--epoch=3"], "--epochs")
    assert not flags.flag_given([], "--epochs")
    # No argv: the command line's, past the program's name.
    monkeypatch.setattr(sys, "argv", ["prog.py", "--epochs"])
    assert flags.flag_given(None, "--epochs")
    monkeypatch.setattr(sys, "argv", ["--epochs", "prog.py"])
    assert not flags.flag_given(None, "--epochs")


def quantize_parser(**kwargs):
    parser = flags.make_parser(DOC, "out", training=False)
    flags.add_quantize_base_flag(parser, "the encoder")
    flags.add_quantize_flag(parser, "the best model", **kwargs)
    parser.add_argument("--lora-rank", type=int)
    return parser


def test_the_quantization_flags_say_what_they_do():
    shown = help_of(quantize_parser())
    assert (
        "--quantize-base {int8} with --lora-rank: quantize the encoder first "
        "(Model.quantize), so the float LoRA factors train beside int8 kernels "
        "(QLoRA's recipe); the saved model holds each kernel merged with its "
        "factors, quantized again --quantize {int8,float8} quantize the best "
        "model (Model.quantize: Dense and embedding kernels; norms and the "
        "spatial gating unit stay float) and report its score beside float32's"
    ) in shown
    gptq = help_of(quantize_parser(modes=("int8", "gptq")))
    assert (
        "--quantize {int8,gptq} quantize the best model (Model.quantize: Dense "
        "and embedding kernels; norms and the spatial gating unit stay float; "
        "gptq: 4-bit, calibrated block by block on train windows) and report "
        "its score beside float32's"
    ) in gptq
    args = quantize_parser().parse_args([])
    assert (args.quantize_base, args.quantize) == (None, None)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--quantize-base", "int8"],
            "--quantize-base: int8 kernels do not train; it needs --lora-rank "
            "(LoRA factors beside the quantized weights)",
        ),
        (
            ["--quantize-base", "int8", "--lora-rank", "4", "--quantize", "float8"],
            "--quantize float8: the model is already quantized (--quantize-base "
            "int8); its test score is the quantized model's",
        ),
    ],
)
def test_the_quantization_flags_are_checked_together(argv, message, capsys):
    parser = quantize_parser()
    args = parser.parse_args(argv)
    last = refusal(lambda: flags.check_quantize_base(parser, args), capsys)
    assert last == f"{parser.prog}: error: {message}"


def test_a_quantized_base_with_lora_passes_its_check(capsys):
    parser = quantize_parser()
    for argv in (
        [],
        ["--quantize", "int8"],
        ["--quantize-base", "int8", "--lora-rank", "2"],
    ):
        flags.check_quantize_base(parser, parser.parse_args(argv))
    # A program without --quantize.
    args = argparse.Namespace(quantize_base="int8", lora_rank=2)
    flags.check_quantize_base(parser, args)
    assert capsys.readouterr().err == ""


def test_the_variant_tables_are_read_from_the_checkout_first(tmp_path, monkeypatch):
    tables = tmp_path / "variants.py"
    tables.write_text("GMLP_TEXT_VARIANTS = {'tiny': 1}\n")
    monkeypatch.setattr(variants, "CHECKOUT_TABLES", tables)
    assert variants.variant_tables().GMLP_TEXT_VARIANTS == {"tiny": 1}


def test_the_variant_tables_are_the_packages_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setattr(variants, "CHECKOUT_TABLES", tmp_path / "none.py")
    module = variants.variant_tables()
    assert pathlib.Path(module.__file__).parts[-3:] == (
        "keras_gmlp",
        "utils",
        "variants.py",
    )
    assert "gmlp_s16" in module.IMAGE_CLASSIFIER_VARIANTS
    assert "keras" not in module.__dict__  # plain data, loaded without Keras


def test_the_variant_tables_refuse_without_the_package(tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.setattr(variants, "CHECKOUT_TABLES", tmp_path / "none.py")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit) as raised:
        variants.variant_tables()
    assert raised.value.code == (
        "keras_gmlp is neither beside this program nor installed; install it "
        'with: .venv/bin/python -m pip install -e ".[all,apps]"'
    )


@pytest.mark.parametrize(
    "python, cwd, expected",
    [
        # Below the working directory: relative, as the README's set-up.
        ("venv/bin/python", "", "venv/bin/python"),
        ("python", "", "./python"),
        # Elsewhere: absolute.
        ("bin/python", "work", "{root}/bin/python"),
    ],
)
def test_the_printed_command_runs_this_python(
    python, cwd, expected, tmp_path, monkeypatch
):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / cwd)
    monkeypatch.setattr(sys, "executable", str(tmp_path / python))
    command = commands.python_command("applications/x.py", "--note", "a b")
    assert command == f"{expected.format(root=tmp_path)} applications/x.py --note 'a b'"


@pytest.mark.parametrize("unknown", ["", None])
def test_the_printed_command_names_python3_where_python_has_no_path(
    unknown, monkeypatch
):
    """sys.executable is empty or None where Python cannot tell its path:
    `python3` from PATH, not a `./python3` in the working directory."""
    monkeypatch.setattr(sys, "executable", unknown)
    assert commands.python_command("applications/x.py") == "python3 applications/x.py"


@pytest.fixture
def probes(monkeypatch):
    """The network probes made: connections to the mirror all succeed."""
    made = []

    class Connection:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def connect(address, timeout=None):
        made.append((address, timeout))
        return Connection()

    monkeypatch.setattr(socket, "create_connection", connect)
    return made


def test_the_network_probe_asks_the_mirror_once(probes, monkeypatch):
    assert tfds_names.network_reachable() is True
    assert probes == [(("storage.googleapis.com", 443), 3)]

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")

    monkeypatch.setattr(socket, "create_connection", refuse)
    assert tfds_names.network_reachable() is False


class Builder:
    def __init__(self, name, data_dir, prepared):
        self.name, self.data_dir, self.prepared = name, data_dir, prepared

    def is_prepared(self):
        return self.prepared


@pytest.fixture
def fake_tfds(monkeypatch):
    """A stand-in for tensorflow_datasets: its names (without community
    datasets, as asked), and builders that are prepared unless the test
    says otherwise, or raise the error the test gives."""
    tfds = types.SimpleNamespace(
        asked=[], error=None, prepared=True, names=["cifar10", "glue", "mnist"]
    )
    for name in ("mnist1", "mnist12", "mnist123", "mnist1234"):
        tfds.names.append(name)

    def list_builders(*, with_community_datasets=True):
        tfds.asked.append(with_community_datasets)
        return list(tfds.names)

    def builder(name, data_dir=None):
        if tfds.error is not None:
            raise tfds.error
        return Builder(name, data_dir, tfds.prepared)

    tfds.list_builders, tfds.builder = list_builders, builder
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", tfds)
    return tfds


@pytest.mark.parametrize(
    "name, message",
    [
        # The three nearest of five, nearest first (difflib's ratios of
        # "mnist0": 10/11, 10/12, 10/13, then 10/14 and 10/15).
        (
            "mnist0/x:1.0.0",
            "tensorflow-datasets has no dataset 'mnist0/x:1.0.0'; "
            "did you mean mnist, mnist1, mnist12?",
        ),
        (
            "zzzz",
            "tensorflow-datasets has no dataset 'zzzz' (its names: "
            "tfds.list_builders())",
        ),
    ],
)
def test_an_unknown_dataset_is_refused_with_the_nearest_names(name, message, fake_tfds):
    with pytest.raises(ValueError) as raised:
        tfds_names.checked_builder(name, None, will_download=False)
    assert str(raised.value) == message
    assert fake_tfds.asked == [False]


@pytest.mark.parametrize(
    "name", ["mnist", "glue/mnli", "cifar10:3.0.2", "glue/qqp:2.0.0"]
)
def test_a_known_dataset_gives_its_builder(name, fake_tfds, probes):
    builder = tfds_names.checked_builder(name, "/data", will_download=True)
    assert (builder.name, builder.data_dir) == (name, "/data")
    assert probes == []  # prepared: nothing to download


@pytest.mark.parametrize(
    "error, reason",
    [
        (KeyError("no config 'x'"), "\"no config 'x'\""),
        (ValueError("\n  first line\nsecond line"), "first line"),
        (AssertionError(), "AssertionError"),
        (RuntimeError("  \n "), "RuntimeError"),
    ],
)
def test_a_builder_error_is_one_line(error, reason, fake_tfds):
    fake_tfds.error = error
    with pytest.raises(ValueError) as raised:
        tfds_names.checked_builder("glue/x", None, will_download=False)
    assert str(raised.value) == f"'glue/x': {reason}"
    assert raised.value.__suppress_context__


def test_unprepared_data_is_probed_for_only_when_it_will_download(
    fake_tfds, probes, monkeypatch
):
    fake_tfds.prepared = False
    assert (
        tfds_names.checked_builder("mnist", None, will_download=False).name == "mnist"
    )
    assert probes == []
    assert tfds_names.checked_builder("mnist", None, will_download=True).name == "mnist"
    assert len(probes) == 1
    monkeypatch.setattr(tfds_names, "network_reachable", lambda: False)
    for data_dir, shown in ((None, "~/tensorflow_datasets"), ("/data", "/data")):
        with pytest.raises(ValueError) as raised:
            tfds_names.checked_builder("mnist", data_dir, will_download=True)
        assert str(raised.value) == (
            f"'mnist' is not prepared under {shown} and there is no network to "
            "download it (storage.googleapis.com did not answer in 3 s); prepare "
            "it where there is one and pass --data-dir"
        )
