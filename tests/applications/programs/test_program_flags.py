"""What every program in applications/ shares at its start: numeric flags
checked when parsed, --weights checked by its first bytes, each default
stated once in --help, output files that follow the umask, and TensorFlow's
start-up lines held back.

Cost: about 15 subprocesses that stop at a flag error before Keras is
imported (well under a second each), and in-process checks on tiny files.
"""

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest
from _image_classifier import recipe
from _shared import callbacks
from _shared import files
from _shared import logs

from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs.helpers import describe
from tests.applications.programs.helpers import program_env
from tests.applications.programs.helpers import program_path

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

PROGRAMS = (
    "pretrain_mlm",
    "train_causal_lm",
    "finetune_text_classifier",
    "train_image_classifier",
)


def run_flags(program, *args, tmp_path):
    """Runs `program` with `args` and a fresh --output-dir."""
    command = [sys.executable, str(program_path(program)), *map(str, args)]
    command += ["--output-dir", str(tmp_path / "out")]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env=program_env(),
        cwd=tmp_path,
    )


# (program, flag, refused value), as a user meets them: a process that
# exits 2 with one usage line. Every numeric flag's accepted and refused
# edges are checked in-process (tests/applications/units/test_flag_edges.py);
# these few, one per program and kind of value, check what the process does.
REFUSED = [
    ("pretrain_mlm", "--learning-rate", "nan"),
    ("pretrain_mlm", "--dropout", "1"),
    ("train_causal_lm", "--learning-rate", "-inf"),
    ("finetune_text_classifier", "--test-fraction", "0"),
    ("train_image_classifier", "--seed", str(2**32)),
    ("train_image_classifier", "--lora-rank", "0"),
]


@pytest.mark.parametrize("program, flag, value", REFUSED)
def test_out_of_range_numbers_are_usage_errors(program, flag, value, tmp_path):
    # "--flag=value", as "-inf" would otherwise read as a flag.
    result = run_flags(program, f"{flag}={value}", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    last_line = result.stderr.strip().splitlines()[-1]
    assert f"error: argument {flag}: " in last_line
    assert repr(value) in last_line
    assert "Traceback" not in result.stderr
    # Refused before any work: the output directory was not even made.
    assert not (tmp_path / "out").exists()


def help_entries(program):
    """{flag: its help text on one line} from `program --help`."""
    result = subprocess.run(
        [sys.executable, str(program_path(program)), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env=program_env(),
    )
    assert result.returncode == 0, describe(result)
    entries, flag = {}, None
    for line in result.stdout.split("options:\n", 1)[1].splitlines():
        if line.startswith("  -"):  # a flag, in any argument group
            flag = line.split()[0].rstrip(",")
            entries[flag] = line.strip()
        elif flag is not None and line.startswith("    "):  # its help goes on
            entries[flag] += " " + line.strip()
        else:  # a blank line, a group's title or the epilog
            flag = None
    return entries


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_states_each_default_once(program):
    entries = help_entries(program)
    for text in entries.values():
        assert text.count("default") <= 1, text
        assert "(default: None)" not in text, text
    assert "(default: 0)" in entries["--seed"]


def test_help_states_the_true_defaults():
    mlm = help_entries("pretrain_mlm")
    assert mlm["--num-layers"].endswith("blocks of a small model (default: 4)")
    assert mlm["--epochs"].endswith("training epochs (default: 6)")
    assert mlm["--learning-rate"].endswith("(default: 0.001)")
    image = help_entries("train_image_classifier")
    assert image["--depth"].endswith("(default: 4)")
    assert image["--ffn-ratio"].endswith("(default: 6 for gmlp, 4 for mixer)")
    assert image["--batch-size"].endswith("batch size (default: 64)")
    # Switches are off unless given: no default to state.
    assert "default" not in image["--flip"]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("notes.weights.h5", b"plain text\n", "not a Keras weights file"),
        ("model.keras", b"plain text\n", "not a Keras weights file"),
        ("timm.safetensors", b"\x00" * 16, "not a safetensors checkpoint"),
        ("timm.pth", b"plain text\n", "not a PyTorch checkpoint"),
    ],
)
def test_weights_of_the_wrong_kind_are_refused(name, content, message, tmp_path):
    path = tmp_path / name
    path.write_bytes(content)
    result = run_flags("train_image_classifier", "--weights", path, tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.endswith(f"--weights: {message}: {path}")
    assert "Traceback" not in result.stderr


def test_missing_weights_file_is_named(tmp_path):
    path = tmp_path / "missing.weights.h5"
    result = run_flags("train_image_classifier", "--weights", path, tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert result.stderr.strip().endswith(f"--weights: file not found: {path}")


def test_weights_files_that_keras_and_torch_write_pass_the_check(tmp_path):
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.save_weights(str(tmp_path / "a.weights.h5"))
    model.save(str(tmp_path / "a.keras"))
    # A torch.save zip archive, and a safetensors file: an 8-byte header
    # size, then the JSON header.
    with zipfile.ZipFile(tmp_path / "a.pth", "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    header = b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    data = np.float32([1.0]).tobytes()
    (tmp_path / "a.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header + data
    )
    for name in ("a.weights.h5", "a.keras", "a.pth", "a.safetensors"):
        assert recipe.weights_file_problem(str(tmp_path / name)) is None, name


@pytest.fixture
def umask():
    """Sets the process umask for a test, then restores it."""
    previous = os.umask(0o022)
    yield lambda value: os.umask(value)
    os.umask(previous)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize(
    "mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_outputs_follow_the_umask(umask, tmp_path, mask, file_mode, dir_mode):
    umask(mask)
    files.write_text(tmp_path / "summary.json", "{}\n")
    with files.atomic_path(tmp_path / "plot.png") as temporary:
        with open(temporary, "wb") as handle:
            handle.write(b"png")

    def save_preset(folder):
        with open(os.path.join(folder, "config.json"), "w") as handle:
            handle.write("{}")

    callbacks.save_model(None, tmp_path / "final_preset", save_preset)
    assert mode(tmp_path / "summary.json") == file_mode
    assert mode(tmp_path / "plot.png") == file_mode
    assert mode(tmp_path / "final_preset") == dir_mode
    assert mode(tmp_path / "final_preset" / "config.json") == file_mode
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "final_preset",
        "plot.png",
        "summary.json",
    ]


def test_keras_files_follow_the_umask(umask, tmp_path):
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    callbacks.save_model(model, tmp_path / "final.keras")
    assert mode(tmp_path / "final.keras") == 0o644


# Lines TensorFlow 2.21 wrote while loading, verbatim but for the times.
START_UP = [
    "WARNING: All log messages before absl::InitializeLog() is called are "
    "written to STDERR\n",
    "I0000 00:00:1795544116.152911   12863 port.cc:153] oneDNN custom "
    "operations are on.\n",
    "I0000 00:00:1795544116.153692   12863 cudart_stub.cc:31] Could not find "
    "cuda drivers on your machine, GPU will not be used.\n",
    "To enable the following instructions: AVX2 AVX512F FMA, in other "
    "operations, rebuild TensorFlow with the appropriate compiler flags.\n",
]
NO_DRIVER = (
    "E0000 00:00:1795544123.629894   12863 cuda_platform.cc:52] failed call "
    "to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR "
    "(303)\n"
)
OTHER_ERROR = (
    "E0000 00:00:1795544126.920091   12863 node_def_util.cc:682] NodeDef "
    "mentions attribute use_unbounded_threadpool\n"
)


def test_start_up_lines_below_the_log_level_are_held_back():
    for line in START_UP:
        assert logs.is_start_up_notice(line, level=2, has_gpu=False)
    assert logs.is_start_up_notice(NO_DRIVER, level=2, has_gpu=False)
    # With a GPU, a failed CUDA start is worth reading; so is any other
    # error, and everything at level 0.
    assert not logs.is_start_up_notice(NO_DRIVER, level=2, has_gpu=True)
    assert not logs.is_start_up_notice(OTHER_ERROR, level=2, has_gpu=False)
    assert logs.is_start_up_notice(OTHER_ERROR, level=3, has_gpu=False)
    assert not logs.is_start_up_notice("Epoch 1/8\n", level=2, has_gpu=False)
    assert not logs.is_start_up_notice(START_UP[1], level=0, has_gpu=False)


@pytest.mark.parametrize(
    "program, flags, reason",
    [
        ("pretrain_mlm", ["--steps", "5", "--epochs", "2"], "--steps and --epochs"),
        ("train_causal_lm", ["--eval-every", "4", "--save-every", "3"], "must divide"),
        ("pretrain_mlm", ["--recipe", "paper"], "--recipe paper is the recipe"),
        ("finetune_text_classifier", ["--test-files", "x"], "needs --train-files"),
        ("pretrain_mlm", ["--train-files", "x", "--dataset", "y"], "give one"),
        (
            "train_image_classifier",
            ["--lora-rank", "2"],
            "--lora-rank: LoRA adapts pretrained weights; pass --weights",
        ),
        (
            "finetune_text_classifier",
            ["--quantize-base", "int8"],
            "--quantize-base: int8 kernels do not train; it needs --lora-rank",
        ),
        (
            "train_image_classifier",
            ["--quantize-base", "int8"],
            "--quantize-base: int8 kernels do not train; it needs --lora-rank",
        ),
    ],
)
def test_a_flag_error_is_a_usage_line_and_the_reason(program, flags, reason, tmp_path):
    result = run_flags(program, *flags, tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("usage: ") and "--help" in lines[0]
    assert reason in lines[1]
    assert not (tmp_path / "out" / "run_state.json").exists()


def test_a_finished_run_answers_before_tensorflow_loads(tmp_path):
    output_dir = tmp_path / "out"
    output_dir.mkdir()
    program = load_program("pretrain_mlm")
    _, args = program.parse_args(["--fast", "--output-dir", str(output_dir)])
    model_flags = {name: getattr(args, name) for name in program.recipe.MODEL_FLAGS}
    state = {
        "stage": "finished",
        "model_flags": json.loads(json.dumps(model_flags, default=str)),
    }
    (output_dir / "run_state.json").write_text(json.dumps(state))
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['pretrain_mlm.py', '--fast', '--output-dir', {str(output_dir)!r}]\n"
        "try:\n"
        f"    runpy.run_path({str(program_path('pretrain_mlm'))!r}, run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    assert stop.code in (0, None), stop.code\n"
        "print('tensorflow' in sys.modules, 'keras' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=program_env(mock_tfds=True),
        cwd=tmp_path,
    )
    assert result.returncode == 0, describe(result)
    assert "holds a finished run" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "False False"


MULTI = ["--distribute", "data", "--num-processes", "2"]


@pytest.mark.parametrize(
    "program, flags, reason",
    [
        ("pretrain_mlm", MULTI + ["--process-id", "0"], "needs --coordinator"),
        (
            "train_causal_lm",
            MULTI + ["--process-id", "2", "--coordinator", "127.0.0.1:1"],
            "--process-id 2 must be from 0 to below --num-processes 2",
        ),
        (
            "finetune_text_classifier",
            MULTI + ["--process-id", "0", "--coordinator", "localhost"],
            "HOST:PORT",
        ),
        (
            "pretrain_mlm",
            MULTI + ["--process-id", "0", "--coordinator", "a:1,b:2,c:3"],
            "lists 3 addresses",
        ),
        (
            "train_image_classifier",
            ["--num-processes", "2", "--process-id", "0", "--coordinator", "h:1"],
            "needs --distribute data",
        ),
        (
            "pretrain_mlm",
            MULTI
            + ["--process-id", "1", "--coordinator", "h:1", "--input-shards", "3"],
            "multiple of --num-processes 2",
        ),
        ("pretrain_mlm", ["--input-shards", "3"], "multiple of the 3 input shards"),
        ("train_image_classifier", ["--model-shards", "2"], "needs --distribute model"),
    ],
)
def test_multi_process_flags_are_checked_together(program, flags, reason, capsys):
    with pytest.raises(SystemExit) as raised:
        load_program(program).parse_args(flags + ["--output-dir", "unused"])
    assert raised.value.code == 2
    assert reason in capsys.readouterr().err.splitlines()[-1]


def test_multi_process_flags_default_to_keras_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "10.0.0.1:1234")
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "4")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "3")
    _, args = load_program("pretrain_mlm").parse_args(
        ["--distribute", "data", "--output-dir", str(tmp_path / "out")]
    )
    assert (args.coordinator, args.num_processes, args.process_id) == (
        "10.0.0.1:1234",
        4,
        3,
    )
    # One input shard per process, unless given.
    assert args.input_shards == 4
    # The environment's values are checked as the flags are.
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "-1")
    with pytest.raises(SystemExit):
        load_program("pretrain_mlm").parse_args(
            ["--distribute", "data", "--output-dir", str(tmp_path / "out")]
        )
