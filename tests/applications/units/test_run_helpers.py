"""The programs' run helpers (applications/_shared/: run_state, files,
interrupt, logs, report, progress's TensorBoard writer): what a rerun finds
in --output-dir and each refusal whole, the files' names and modes, Ctrl-C
and a lost peer, the TensorFlow start-up lines kept, the summary and plots
by value. Fakes and small files; no model is trained.

Cost: about 3 s, once (backend independent).
"""

import io
import json
import os
import pathlib
import signal
import stat
import sys
import types

import numpy as np
import pytest
from _shared import files
from _shared import flag_parser
from _shared import interrupt
from _shared import logs
from _shared import progress
from _shared import report
from _shared import run_state
from _shared.commands import python_command

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def writer():
    yield
    files.set_writer(True)


def refusal(call, *args):
    with pytest.raises(SystemExit) as raised:
        call(*args)
    return str(raised.value.code)


# run_state: the history, the state file, and what a rerun finds.


def test_a_history_is_read_by_epoch_from_zero_with_empty_cells_left_out(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss,val_loss\n1,0.5,0.25\n2,0.375,\n")
    assert run_state.read_history_rows(path) == {
        0: {"loss": 0.5, "val_loss": 0.25},
        1: {"loss": 0.375},
    }
    assert run_state.read_history_rows(str(path)) == {
        0: {"loss": 0.5, "val_loss": 0.25},
        1: {"loss": 0.375},
    }


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"epoch,loss\n1,0.5,0.25\n", "not a history of epochs: a row has another "),
        (b"epoch,loss,acc\n1,0.5\n", "not a history of epochs: a row has another "),
        (b"loss\n0.5\n", "not a history of epochs: 'epoch'"),
        (b"epoch,loss\n1,x\n", "not a history of epochs: could not convert string "),
        (b"epoch,loss\n1,0.5\xff\n", "not UTF-8 text"),
    ],
)
def test_a_damaged_history_is_refused_with_its_reason(tmp_path, data, reason):
    path = tmp_path / "history.csv"
    path.write_bytes(data)
    message = refusal(run_state.read_history_rows, path)
    assert message.startswith(f"{path} is damaged ({reason}")
    assert message.endswith("); rerun with --restart to start over")


@pytest.mark.parametrize(
    "read, name",
    [
        (run_state.read_history_rows, "history.csv"),
        (run_state.read_state, "run_state.json"),
    ],
)
def test_a_file_that_is_a_folder_is_refused_with_the_system_reason(
    tmp_path, read, name
):
    path = tmp_path / name
    path.mkdir()
    assert refusal(read, path) == (
        f"{path} is damaged (Is a directory); rerun with --restart to start over"
    )
    exit = run_state.damaged(path, "why")
    assert isinstance(exit, SystemExit)


def test_a_history_read_error_without_a_reason_is_named_by_its_type(
    tmp_path, monkeypatch
):
    path = tmp_path / "history.csv"
    path.write_text("epoch\n1\n")

    def failing_open(*args, **kwargs):
        raise PermissionError()

    monkeypatch.setattr("builtins.open", failing_open)
    assert refusal(run_state.read_history_rows, path) == (
        f"{path} is damaged (PermissionError); rerun with --restart to start over"
    )


def state_text(stage, flags):
    return json.dumps({"stage": stage, "model_flags": flags}, indent=2) + "\n"


def test_a_run_writes_nothing_until_it_begins_then_its_stages(tmp_path, monkeypatch):
    monkeypatch.setattr(run_state.time, "time", lambda: 1234.5)
    run = run_state.RunState(tmp_path / "out", {"model": "tiny"})
    assert (run.stage, run.restart, run.resuming, run.started) == (
        "training",
        False,
        False,
        1234.5,
    )
    assert run.path == tmp_path / "out" / "run_state.json"
    (tmp_path / "out").mkdir()
    assert list((tmp_path / "out").iterdir()) == []
    run.begin()
    assert run.path.read_text() == state_text("training", {"model": "tiny"})
    run.set_stage("trained")
    assert run.stage == "trained"
    assert run.path.read_text() == state_text("trained", {"model": "tiny"})
    (tmp_path / "out" / "trained.weights.h5").write_bytes(b"w")
    run.finish()
    assert run.path.read_text() == state_text("finished", {"model": "tiny"})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run_state.json"]
    run.finish()  # no trained weights left: no error
    with pytest.raises(ValueError) as raised:
        run.set_stage("done")
    assert str(raised.value) == (
        "`stage` must be one of ('training', 'trained', 'finished'). Received: done"
    )
    assert run.stage == "finished"


def test_begin_keeps_the_output_dir_a_later_refusal_would_remove(tmp_path):
    flag_parser.note_created_output_dir(tmp_path / "out")
    (tmp_path / "out").mkdir()
    run_state.RunState(tmp_path / "out", {}).begin()
    flag_parser.discard_created_output_dir()
    assert (tmp_path / "out" / "run_state.json").is_file()


def earlier_run(folder):
    """A run's resume files, and outputs the new run overwrites."""
    folder.mkdir(exist_ok=True)
    for name in ("run_state.json", "history.csv", "trained.weights.h5", "a.png"):
        (folder / name).write_text(name)
    (folder / "backup" / "inner").mkdir(parents=True)
    (folder / "backup" / "inner" / "epoch-1.weights.h5").write_text("w")
    return folder


def test_restart_discards_the_resume_files_when_it_begins(tmp_path):
    folder = earlier_run(tmp_path / "out")
    run = run_state.RunState(folder, {"a": 1}, stage="trained", restart=True)
    assert (folder / "history.csv").exists()  # nothing before begin()
    run.begin()
    assert run.restart is False
    assert sorted(p.name for p in folder.iterdir()) == ["a.png", "run_state.json"]
    assert run.path.read_text() == state_text("trained", {"a": 1})
    # A folder without an earlier run: nothing to discard, no error.
    (tmp_path / "empty").mkdir()
    run_state.RunState(tmp_path / "empty", {}, restart=True).begin()
    assert [p.name for p in (tmp_path / "empty").iterdir()] == ["run_state.json"]


def test_restart_stops_where_a_resume_file_cannot_be_removed(tmp_path, monkeypatch):
    folder = earlier_run(tmp_path / "out")
    stuck = folder / "backup" / "inner" / "epoch-1.weights.h5"

    def rmtree(path):
        raise PermissionError(13, "Permission denied", str(stuck))

    monkeypatch.setattr(run_state.shutil, "rmtree", rmtree)
    run = run_state.RunState(folder, {"a": 1}, restart=True)
    with pytest.raises(SystemExit) as exit:
        run.begin()
    assert str(exit.value) == (
        f"--restart could not remove {stuck} (Permission denied); remove it and rerun"
    )
    # The backup went first: nothing else of the earlier run is gone.
    assert sorted(p.name for p in folder.iterdir()) == [
        "a.png",
        "backup",
        "history.csv",
        "run_state.json",
        "trained.weights.h5",
    ]
    assert (folder / "run_state.json").read_text() == "run_state.json"
    # A file that cannot be unlinked, after the backup: named by its path.
    monkeypatch.undo()

    def unlink(path, missing_ok=False):
        raise OSError(16, "Device or resource busy", str(path))

    monkeypatch.setattr(pathlib.Path, "unlink", unlink)
    with pytest.raises(SystemExit) as exit:
        run_state.discard_run(folder)
    weights = folder / "trained.weights.h5"
    assert str(exit.value) == (
        f"--restart could not remove {weights} (Device or resource busy); "
        "remove it and rerun"
    )
    assert not (folder / "backup").exists()
    assert (folder / "history.csv").exists() and (folder / "run_state.json").exists()
    # An error without a reason or a file: its type, and the path removed.
    monkeypatch.undo()
    (folder / "backup").mkdir()

    def rmtree_without_reason(path):
        raise OSError

    monkeypatch.setattr(run_state.shutil, "rmtree", rmtree_without_reason)
    with pytest.raises(SystemExit) as exit:
        run_state.discard_run(folder)
    assert str(exit.value) == (
        f"--restart could not remove {folder / 'backup'} (OSError); remove it and rerun"
    )


def test_discard_run_removes_a_linked_backup_not_what_it_links_to(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "backup").symlink_to(target, target_is_directory=True)
    run_state.discard_run(folder)
    assert not (folder / "backup").is_symlink()
    assert (target / "keep.txt").read_text() == "kept"


def test_a_process_that_does_not_write_discards_nothing(tmp_path, writer):
    folder = earlier_run(tmp_path / "out")
    files.set_writer(False)
    run_state.discard_run(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "a.png",
        "backup",
        "history.csv",
        "run_state.json",
        "trained.weights.h5",
    ]


def test_a_missing_state_is_none_and_a_stored_one_is_read(tmp_path):
    path = tmp_path / "run_state.json"
    assert run_state.read_state(path) is None
    path.write_text(state_text("trained", {"model": "tiny"}))
    assert run_state.read_state(path) == {
        "stage": "trained",
        "model_flags": {"model": "tiny"},
    }


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "not a run state: Expecting value: line 1 column 1 (char 0)"),
        (b'{"stage": "done", "model_flags": {}}', "not a run state: unknown stage "),
        (b'{"stage": "trained", "model_flags": []}', "not a run state: unknown stage"),
        (b'{"model_flags": {}}', "not a run state: 'stage'"),
        (b'{"stage": "trained"}', "not a run state: 'model_flags'"),
        (b"[1]", "not a run state: list indices must be integers"),
        (b'{"stage": "\xff"}', "not UTF-8 text"),
    ],
)
def test_a_damaged_state_is_refused_with_its_reason(tmp_path, data, reason):
    path = tmp_path / "run_state.json"
    path.write_bytes(data)
    message = refusal(run_state.read_state, path)
    assert message.startswith(f"{path} is damaged ({reason}")
    assert message.endswith("); rerun with --restart to start over")


def test_flag_values_keep_paths_as_strings_and_differences_name_each_flag():
    args = types.SimpleNamespace(
        model="tiny", data_dir=pathlib.Path("/data/x"), seq_len=128, other=1
    )
    flags = run_state.flag_values(args, ["model", "data_dir", "seq_len"])
    assert flags == {"model": "tiny", "data_dir": "/data/x", "seq_len": 128}
    assert type(flags["data_dir"]) is str
    stored = {"model": "base", "data_dir": "/data/x"}
    assert run_state.flag_differences(stored, flags) == [
        "--model: 'base' -> 'tiny'",
        "--seq-len: None -> 128",
    ]
    assert run_state.flag_differences(flags, flags) == []


def run_args(folder, restart=False, **flags):
    return types.SimpleNamespace(output_dir=str(folder), restart=restart, **flags)


def test_open_run_starts_fresh_and_resumes_at_the_stored_stage(tmp_path):
    run = run_state.open_run(run_args(tmp_path / "out", model="tiny"), ["model"])
    assert (run.output_dir, run.model_flags, run.stage, run.resuming) == (
        tmp_path / "out",
        {"model": "tiny"},
        "training",
        False,
    )
    assert run.restart is False
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()  # by the flags' parsing, in the programs
    run.begin()
    run.set_stage("trained")
    again = run_state.open_run(run_args(tmp_path / "out", model="tiny"), ["model"])
    assert (again.stage, again.resuming, again.restart) == ("trained", True, False)


def test_open_run_refuses_other_model_flags_whole(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    run_state.open_run(run_args(folder, model="tiny", seq=8), ["model", "seq"]).begin()
    args = run_args(folder, model="base", seq=16)
    assert refusal(run_state.open_run, args, ["model", "seq"]) == (
        f"{folder} holds a run with other model flags (--model: 'tiny' -> 'base'; "
        "--seq: 8 -> 16): rerun with the stored ones, use another --output-dir, "
        "or pass --restart to start over"
    )


def test_open_run_says_a_finished_run_is_finished(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    run = run_state.open_run(run_args(folder, model="tiny"), ["model"])
    run.begin()
    run.finish()
    with pytest.raises(SystemExit) as raised:
        run_state.open_run(run_args(folder, model="tiny"), ["model"])
    assert raised.value.code == 0
    assert capsys.readouterr().out == (
        f"{folder} holds a finished run; its results are in "
        f"{folder / 'summary.json'}. Pass --restart to train it again.\n"
    )


def test_open_run_checks_the_history_and_restart_reads_nothing(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "history.csv").write_text("loss\n0.5\n")
    message = refusal(run_state.open_run, run_args(folder, model="t"), ["model"])
    assert message.startswith(f"{folder / 'history.csv'} is damaged")
    (folder / "run_state.json").write_text("not json")
    run = run_state.open_run(run_args(folder, restart=True, model="t"), ["model"])
    assert (run.restart, run.stage, run.resuming) == (True, "training", False)
    assert run.model_flags == {"model": "t"}


# files: names, modes, and the writes of a process that does not write.


def test_set_writer_keeps_a_truth_value(writer):
    files.set_writer(0)
    assert files.is_writer() is False
    files.set_writer("yes")
    assert files.is_writer() is True


def test_temporary_files_and_folders_take_the_umask_and_fresh_names(
    tmp_path, umask_022, monkeypatch
):
    path = files.reserve_temporary_file(tmp_path, ".name-", ".h5")
    assert path.parent == tmp_path
    assert path.name.startswith(".name-") and path.name.endswith(".h5")
    assert len(path.name) == len(".name-") + 12 + len(".h5")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_bytes() == b""
    folder = files.make_temporary_dir(tmp_path, "stage-")
    assert folder.parent == tmp_path and folder.name.startswith("stage-")
    assert len(folder.name) == len("stage-") + 12
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    # A name already taken is drawn again.
    names = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda size: next(names))
    assert files.reserve_temporary_file(tmp_path, "t-").name == "t-aaaaaaaaaaaa"
    assert files.reserve_temporary_file(tmp_path, "t-").name == "t-bbbbbbbbbbbb"
    names = iter(["cccccccccccc", "cccccccccccc", "dddddddddddd"])
    assert files.make_temporary_dir(tmp_path, "d-").name == "d-cccccccccccc"
    assert files.make_temporary_dir(tmp_path, "d-").name == "d-dddddddddddd"


def test_the_temporary_path_lies_beside_the_file_with_its_suffix(tmp_path):
    path = tmp_path / "model.weights.h5"
    with files.atomic_path(path) as temporary:
        temporary = pathlib.Path(temporary)
        assert temporary.parent == tmp_path
        assert temporary.name.startswith(".model.weights-")
        assert temporary.suffix == ".h5"
        temporary.write_bytes(b"new")
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["model.weights.h5"]


def test_a_process_that_does_not_write_writes_to_a_scratch_folder(tmp_path, writer):
    files.set_writer(False)
    path = tmp_path / "summary.json"
    with files.atomic_path(path) as temporary:
        assert pathlib.Path(temporary).name == "summary.json"
        assert pathlib.Path(temporary).parent.is_dir()
        assert pathlib.Path(temporary).parent != tmp_path
        pathlib.Path(temporary).write_text("x")
        scratch = pathlib.Path(temporary).parent
    assert not scratch.exists()
    files.write_text(path, "y")
    assert list(tmp_path.iterdir()) == []


# interrupt: Ctrl-C, refusals and a lost peer.


@pytest.fixture
def default_sigint():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupt.INTERRUPTED.clear()
    interrupt.TRAINING.clear()
    yield
    signal.signal(signal.SIGINT, previous)
    interrupt.INTERRUPTED.clear()
    interrupt.TRAINING.clear()


def test_run_returns_what_main_returns_and_handles_ctrl_c(default_sigint):
    assert interrupt.run(lambda: 7) == 7
    assert signal.getsignal(signal.SIGINT) is interrupt._on_interrupt


def test_a_shell_that_ignores_ctrl_c_keeps_ignoring_it(default_sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupt.run(lambda: None)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def press_ctrl_c():
    """What the handler does with a Ctrl-C: "raised" or "deferred" (a
    KeyboardInterrupt that escaped would stop pytest, not fail a test)."""
    try:
        interrupt._on_interrupt(signal.SIGINT, None)
    except KeyboardInterrupt:
        return "raised"
    return "deferred"


def test_ctrl_c_in_training_waits_for_the_batch_end_once(default_sigint):
    interrupt.TRAINING.set()
    assert press_ctrl_c() == "deferred"
    assert interrupt.INTERRUPTED.is_set()
    assert press_ctrl_c() == "raised"  # a second one
    interrupt.TRAINING.clear()
    interrupt.INTERRUPTED.clear()
    assert press_ctrl_c() == "raised"
    assert interrupt.INTERRUPTED.is_set()


def test_ctrl_c_prints_one_line_saying_how_to_resume(
    default_sigint, monkeypatch, capsys
):
    monkeypatch.setattr(sys, "argv", ["applications/x.py", "--epochs", "2"])

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as raised:
        interrupt.run(interrupted)
    assert raised.value.code == 130
    command = python_command("applications/x.py", "--epochs", "2")
    assert capsys.readouterr().err == (
        "\nInterrupted. Rerun the same command to resume where it stopped "
        f"(the last completed epoch, or after training): {command}\n"
    )


@pytest.mark.parametrize(
    "code, kept", [(0, True), (None, True), (2, False), ("x", False)]
)
def test_only_a_refused_start_removes_the_output_dir_it_created(
    tmp_path, default_sigint, code, kept
):
    flag_parser.note_created_output_dir(tmp_path / "out")
    (tmp_path / "out").mkdir()
    with pytest.raises(SystemExit):
        interrupt.run(lambda: sys.exit(code))
    assert (tmp_path / "out").exists() == kept
    flag_parser.keep_output_dir()


class Exited(Exception):
    pass


class FlushedStream(io.StringIO):
    """A text stream that notes how much was written at each flush."""

    def __init__(self):
        super().__init__()
        self.flushed = []

    def flush(self):
        self.flushed.append(len(self.getvalue()))


@pytest.fixture
def processes(monkeypatch):
    exits = []

    def exit_now(status):
        exits.append(status)
        raise Exited

    monkeypatch.setattr(interrupt.os, "_exit", exit_now)

    def set_processes(value):
        monkeypatch.setattr(interrupt, "PROCESSES", value)
        return exits

    return set_processes


@pytest.mark.parametrize(
    "index, count, lost",
    [(0, 2, "process 1"), (1, 2, "process 0"), (0, 3, "another process")],
)
def test_a_lost_peer_is_one_line_and_an_immediate_exit(
    default_sigint, processes, monkeypatch, index, count, lost
):
    exits = processes((index, count))
    stderr = FlushedStream()
    monkeypatch.setattr(sys, "stderr", stderr)
    reason = "  Connection reset BY PEER " + "x" * 400 + "\nsecond line"

    def failing():
        raise RuntimeError(reason)

    with pytest.raises(Exited):
        interrupt.run(failing)
    assert exits == [1]
    first = reason.strip().splitlines()[0][:300]
    line = (
        f"process {index}: lost {lost} of {count} ({first}). Rerun all {count} "
        "processes with the same flags to resume from the last checkpoint.\n"
    )
    # Flushed whole: os._exit skips the flushing of Python's shutdown.
    assert stderr.getvalue() == line
    assert stderr.flushed == [len(line)]


@pytest.mark.parametrize(
    "processes_value, message",
    [(None, "gloo: connection reset by peer"), ((0, 2), "a shape mismatch")],
)
def test_other_errors_are_raised_as_they_are(
    default_sigint, processes, processes_value, message
):
    exits = processes(processes_value)

    def failing():
        raise RuntimeError(message)

    with pytest.raises(RuntimeError, match=message):
        interrupt.run(failing)
    assert exits == []


@pytest.mark.parametrize(
    "message", ["Gloo failed", "heartbeat timeout", "Socket closed", "UNAVAILABLE: x"]
)
def test_each_sign_of_a_lost_peer_is_recognised(message):
    assert interrupt.LOST_PEER.search(message)


# logs: which of TensorFlow's start-up lines are kept.


@pytest.mark.parametrize(
    "line, level, has_gpu, notice",
    [
        ("I0000 00:00:1.5 1 port.cc:153] oneDNN on\n", 1, True, True),
        ("I0000 00:00:1.5 1 port.cc:153] oneDNN on\n", 0, True, False),
        ("W0000 00:00:1.5 1 x.cc:1] warning\n", 1, True, False),
        ("W0000 00:00:1.5 1 x.cc:1] warning\n", 2, True, True),
        ("E0000 00:00:1.5 1 x.cc:1] error\n", 2, True, False),
        ("E0000 00:00:1.5 1 x.cc:1] error\n", 3, True, True),
        ("F0000 00:00:1.5 1 x.cc:1] fatal\n", 3, True, False),
        ("E0000 00:00:1.5 1 x.cc:1] failed call to cuInit: none\n", 1, False, True),
        ("E0000 00:00:1.5 1 x.cc:1] failed call to cuInit: none\n", 1, True, False),
        ("E000 x\n", 3, False, False),
        ("WARNING: All log messages before absl::InitializeLog() is called\n", 0, 0, 1),
        ("To enable the following instructions: AVX2\n", 0, False, True),
        ("Traceback (most recent call last):\n", 3, False, False),
    ],
)
def test_start_up_notices_below_the_level(line, level, has_gpu, notice):
    assert logs.is_start_up_notice(line, level, has_gpu=bool(has_gpu)) == bool(notice)


START_UP = (
    b"I0000 00:00:1.5 1 port.cc:153] oneDNN custom operations are on.\n"
    b"W0000 00:00:1.5 1 x.cc:1] a warning\n"
    b"E0000 00:00:1.5 1 cuda.cc:1] failed call to cuInit: no driver\n"
    b"E0000 00:00:1.5 1 x.cc:1] an error \xff\n"
    b"To enable the following instructions: AVX2\n"
    b"a plain line\n"
)


def fake_tensorflow(gpus):
    """A module that prints TensorFlow's start-up lines to file descriptor 2
    as it lists its devices."""

    def list_physical_devices(kind):
        os.write(2, START_UP)
        return gpus if kind == "GPU" else ["cpu"]

    config = types.SimpleNamespace(list_physical_devices=list_physical_devices)
    return types.SimpleNamespace(config=config)


@pytest.mark.parametrize(
    "gpus, kept",
    [
        ([], "E0000 00:00:1.5 1 x.cc:1] an error \ufffd\na plain line\n"),
        (
            ["gpu"],
            "E0000 00:00:1.5 1 cuda.cc:1] failed call to cuInit: no driver\n"
            "E0000 00:00:1.5 1 x.cc:1] an error \ufffd\na plain line\n",
        ),
    ],
)
def test_tensorflow_is_imported_with_only_the_lines_at_the_level_passed_on(
    monkeypatch, capfd, gpus, kept
):
    monkeypatch.setitem(sys.modules, "tensorflow", fake_tensorflow(gpus))
    logs._import_tensorflow_quietly(2)
    captured = capfd.readouterr()
    assert captured.err == kept
    os.write(2, b"stderr restored\n")
    assert capfd.readouterr().err == "stderr restored\n"


@pytest.mark.parametrize(
    "given, level, verbosity, imports",
    [
        (None, "2", "ERROR", True),
        ("1", "1", "WARNING", True),
        ("3", "3", "ERROR", True),
        ("0", "0", None, False),
        ("x", "x", None, False),
    ],
)
def test_the_log_level_defaults_to_errors_and_sets_absl(
    monkeypatch, given, level, verbosity, imports
):
    from absl import logging as absl_logging

    if given is None:
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", given)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    imported = []
    monkeypatch.setattr(logs, "_import_tensorflow_quietly", imported.append)
    set_to = []
    monkeypatch.setattr(absl_logging, "set_verbosity", set_to.append)
    logs.quiet_tensorflow_logs()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == level
    want = [] if verbosity is None else [getattr(absl_logging, verbosity)]
    assert set_to == want
    assert imported == ([int(level)] if imports else [])


def test_tensorflow_already_imported_is_not_imported_again(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace())
    imported = []
    monkeypatch.setattr(logs, "_import_tensorflow_quietly", imported.append)
    logs.quiet_tensorflow_logs()
    assert imported == []


# report: figures, the summary and the plots.


def test_count_trainable_adds_up_the_trainable_shapes():
    model = types.SimpleNamespace(
        trainable_weights=[
            types.SimpleNamespace(shape=(2, 3)),
            types.SimpleNamespace(shape=(3,)),
            types.SimpleNamespace(shape=()),
        ]
    )
    count = report.count_trainable(model)
    assert count == 10 and type(count) is int


@pytest.mark.parametrize("terminal, verbose", [(True, 1), (False, 2)])
def test_fit_verbose_is_a_bar_on_a_terminal_and_lines_in_a_log(
    monkeypatch, terminal, verbose
):
    monkeypatch.setattr(sys, "stdout", types.SimpleNamespace(isatty=lambda: terminal))
    assert report.fit_verbose() == verbose


def test_the_summary_holds_the_facts_the_time_and_every_flag(tmp_path, monkeypatch):
    import keras

    monkeypatch.setattr(report.time, "time", lambda: 100.26)
    args = types.SimpleNamespace(output_dir=tmp_path, epochs=2)
    summary = report.write_summary(tmp_path / "summary.json", args, 90.0, loss=0.5)
    want = {
        "backend": keras.backend.backend(),
        "keras_version": keras.__version__,
        "seconds": 10.3,
        "loss": 0.5,
        "flags": {"output_dir": tmp_path, "epochs": 2},
    }
    assert summary == want
    want["flags"]["output_dir"] = str(tmp_path)
    assert (tmp_path / "summary.json").read_text() == json.dumps(want, indent=2) + "\n"


def history(rows):
    return types.SimpleNamespace(rows=rows)


def test_a_history_is_plotted_one_panel_per_metric(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    drawn = []
    monkeypatch.setattr(
        report, "save_figure", lambda figure, path: drawn.append(figure)
    )
    rows = {
        0: {"loss": 2.0, "val_loss": 1.5, "learning_rate": 0.1, "val_perplexity": 9.0},
        1: {"loss": 1.0, "learning_rate": 0.05, "val_perplexity": 4.0},
    }
    report.plot_history(history(rows), tmp_path / "h.png", "the title")
    (figure,) = drawn
    assert tuple(figure.get_size_inches()) == (9.0, 3.5)
    assert figure.get_suptitle() == "the title"
    panels = figure.axes
    assert [a.get_title() for a in panels] == ["loss", "perplexity"]
    lines = {
        (axis.get_title(), line.get_label()): (
            list(line.get_xdata()),
            list(line.get_ydata()),
            line.get_marker(),
        )
        for axis in panels
        for line in axis.get_lines()
    }
    assert lines == {
        ("loss", "train"): ([1, 2], [2.0, 1.0], "o"),
        ("loss", "validation"): ([1], [1.5], "o"),
        ("perplexity", "validation"): ([1, 2], [9.0, 4.0], "o"),
    }
    for axis in panels:
        assert axis.get_xlabel() == "epoch"
        assert axis.get_legend() is not None
        assert axis.xaxis.get_gridlines()[0].get_visible()
        assert axis.xaxis.get_gridlines()[0].get_alpha() == 0.3
    plt.close(figure)


def test_one_metric_is_one_panel_and_none_draws_nothing(tmp_path):
    from PIL import Image

    path = tmp_path / "h.png"
    report.plot_history(history({0: {"learning_rate": 0.1}}), path, "t")
    assert not path.exists()
    report.plot_history(history({0: {"loss": 1.0}, 1: {"loss": 0.5}}), path, "t")
    with Image.open(path) as image:
        assert image.size == (495, 385)  # 4.5 x 3.5 inches at 110 dpi
    assert [p.name for p in tmp_path.iterdir()] == ["h.png"]


def test_a_plain_log_axis_labels_1_2_5_per_decade():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots()
    axis.plot([1, 2], [1.0, 100.0])
    report.plain_log_axis(axis)
    axis.set_ylim(1.0, 100.0)
    assert axis.get_yscale() == "log"
    y = axis.yaxis
    ticks = [t for t in y.get_major_locator().tick_values(1.0, 100.0) if 1 <= t <= 100]
    np.testing.assert_allclose(ticks, [1, 2, 5, 10, 20, 50, 100])
    labels = [y.get_major_formatter()(t) for t in ticks]
    assert labels == ["1", "2", "5", "10", "20", "50", "100"]
    assert isinstance(y.get_minor_formatter(), matplotlib.ticker.NullFormatter)
    plt.close(figure)


# progress: the TensorBoard writer.


def test_tensorboard_scalars_go_to_the_folder(tmp_path):
    pytest.importorskip("tensorboardX")
    scalars = progress.tensorboard_writer(tmp_path / "tb")
    scalars.add_scalar("train/loss", 1.0, 1)
    scalars.close()
    assert [p.name.split(".")[0] for p in (tmp_path / "tb").iterdir()] == ["events"]


def test_no_tensorboard_writer_without_tensorboardx_or_in_other_processes(
    tmp_path, monkeypatch, writer
):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    stderr = FlushedStream()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert progress.tensorboard_writer(tmp_path) is None
    note = (
        "No TensorBoard scalars: tensorboardX is not installed "
        "(pip install tensorboardX).\n"
    )
    assert stderr.getvalue() == note
    assert stderr.flushed == [len(note)]  # in a log file, at once
    files.set_writer(False)
    assert progress.tensorboard_writer(tmp_path) is None
    assert stderr.getvalue() == note


def test_run_files_are_utf8_under_an_ascii_locale(tmp_path):
    """A run's files are read and written as UTF-8 whatever the locale: a
    flag value and a metric name not in ASCII."""
    from tests.applications.units.test_text_files import ascii_locale

    history = tmp_path / "history.csv"
    history.write_bytes("epoch,perte\u0301\n1,0.5\n".encode())
    folder = tmp_path / "out"
    folder.mkdir()
    with ascii_locale():
        assert run_state.read_history_rows(history) == {0: {"perte\u0301": 0.5}}
        files.write_text(tmp_path / "note.txt", "caf\u00e9\n")
        run_state.RunState(folder, {"data": "/caf\u00e9"}).begin()
        assert run_state.read_state(folder / "run_state.json")["model_flags"] == {
            "data": "/caf\u00e9"
        }
        # Written by another JSON writer, not in ASCII.
        (folder / "run_state.json").write_bytes(
            '{"stage": "trained", "model_flags": {"data": "/caf\u00e9"}}'.encode()
        )
        assert run_state.read_state(folder / "run_state.json")["model_flags"] == {
            "data": "/caf\u00e9"
        }
    assert (tmp_path / "note.txt").read_bytes() == "caf\u00e9\n".encode()


def test_save_figure_closes_the_figure_it_saved(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved, _ = plt.subplots()
    current, _ = plt.subplots()
    report.save_figure(saved, tmp_path / "a.png")
    assert not plt.fignum_exists(saved.number)
    assert plt.fignum_exists(current.number)
    plt.close(current)


def test_a_state_read_error_without_a_reason_is_named_by_its_type(
    tmp_path, monkeypatch
):
    path = tmp_path / "run_state.json"
    path.write_text(state_text("trained", {}))

    def unreadable(self, encoding=None):
        raise PermissionError()

    monkeypatch.setattr(pathlib.Path, "read_text", unreadable)
    assert refusal(run_state.read_state, path) == (
        f"{path} is damaged (PermissionError); rerun with --restart to start over"
    )
