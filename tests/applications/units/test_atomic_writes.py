"""What a failed or interrupted write of a program's output leaves behind:
the previous file (or preset folder, or stream state) whole, and no
temporary file or folder. Each write is made to fail halfway: the
serializer writes part of its output and raises, or the final rename
does."""

import json
import pathlib
import types

import pytest
from _shared import callbacks
from _shared import files
from _shared import report

# Plain files and fakes: the backend does not matter (CI runs these once).
pytestmark = pytest.mark.backend_independent

PREVIOUS = b"the previous, complete file\n"


class DiskFull(OSError):
    def __init__(self):
        super().__init__(28, "No space left on device")


def write_half(path, data=b"half of a new fi"):
    """What an interrupted serializer leaves: the first bytes only."""
    pathlib.Path(path).write_bytes(data)


def previous_file(folder, name):
    path = folder / name
    path.write_bytes(PREVIOUS)
    return path


def assert_only_previous(folder, path):
    """`path` holds the previous bytes and nothing else is in `folder`."""
    assert sorted(p.name for p in folder.iterdir()) == [path.name]
    assert path.read_bytes() == PREVIOUS


def test_a_block_that_fails_halfway_keeps_the_previous_file(tmp_path):
    path = previous_file(tmp_path, "plot.png")
    with pytest.raises(DiskFull):
        with files.atomic_path(path) as temporary:
            assert pathlib.Path(temporary).parent == tmp_path
            assert temporary.endswith(".png")  # formats follow the suffix
            write_half(temporary)
            raise DiskFull
    assert_only_previous(tmp_path, path)
    # The same write, finished: the new file replaces the old one.
    with files.atomic_path(path) as temporary:
        pathlib.Path(temporary).write_bytes(b"new")
    assert path.read_bytes() == b"new" and len(list(tmp_path.iterdir())) == 1


def test_a_failed_rename_keeps_the_previous_file(tmp_path, monkeypatch):
    import os

    path = previous_file(tmp_path, "history.csv")

    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_text(path, "epoch,loss\n1,0.5\n")
    assert_only_previous(tmp_path, path)


@pytest.fixture
def half_text_writes(monkeypatch):
    """`Path.write_text` (what `files.write_text` serializes with) writes
    half its text, then the disk is full."""

    def write_text(self, data, encoding=None, errors=None, newline=None):
        write_half(self, data[: len(data) // 2].encode())
        raise DiskFull

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)


def test_write_text_that_fails_halfway_keeps_the_previous_file(
    tmp_path, half_text_writes
):
    path = previous_file(tmp_path, "run_state.json")
    with pytest.raises(DiskFull):
        files.write_text(path, json.dumps({"stage": "trained"}))
    assert_only_previous(tmp_path, path)


def test_summary_that_fails_halfway_keeps_the_previous_summary(
    tmp_path, half_text_writes
):
    path = previous_file(tmp_path, "summary.json")
    args = types.SimpleNamespace(seed=0)
    with pytest.raises(DiskFull):
        report.write_summary(path, args, 0.0, accuracy=0.5)
    assert_only_previous(tmp_path, path)


def test_a_figure_that_fails_halfway_keeps_the_previous_plot(tmp_path):
    path = previous_file(tmp_path, "training_curves.png")

    class Figure:
        def savefig(self, target, dpi=None):
            write_half(target)
            raise DiskFull

    with pytest.raises(DiskFull):
        report.save_figure(Figure(), path)
    assert_only_previous(tmp_path, path)


class HalfSavedModel:
    """A model whose `save` and `save_weights` stop halfway."""

    def save(self, path):
        write_half(path)
        raise DiskFull

    def save_weights(self, path):
        write_half(path)
        raise DiskFull


def test_a_keras_file_that_fails_halfway_keeps_the_previous_model(tmp_path):
    path = previous_file(tmp_path, "best.keras")
    with pytest.raises(DiskFull):
        callbacks.save_model(HalfSavedModel(), path)
    assert_only_previous(tmp_path, path)


def test_weights_that_fail_halfway_keep_the_previous_weights(tmp_path):
    path = previous_file(tmp_path, "trained.weights.h5")
    with pytest.raises(DiskFull):
        callbacks.save_weights(HalfSavedModel(), path)
    assert_only_previous(tmp_path, path)


def previous_preset(folder):
    preset = folder / "best_preset"
    preset.mkdir()
    (preset / "config.json").write_bytes(PREVIOUS)
    return preset


def assert_previous_preset(folder, preset):
    assert sorted(p.name for p in folder.iterdir()) == [preset.name]
    assert sorted(p.name for p in preset.iterdir()) == ["config.json"]
    assert (preset / "config.json").read_bytes() == PREVIOUS


def test_a_preset_that_fails_halfway_keeps_the_previous_preset(tmp_path):
    preset = previous_preset(tmp_path)

    def save_to_preset(folder):
        write_half(pathlib.Path(folder) / "config.json")
        raise DiskFull

    with pytest.raises(DiskFull):
        callbacks.save_model(None, preset, save_to_preset)
    assert_previous_preset(tmp_path, preset)


def test_a_preset_interrupted_as_it_is_moved_in_keeps_the_previous_one(
    tmp_path, monkeypatch
):
    """A preset folder cannot be renamed over another: the previous one is
    moved aside first. An interrupt before the new one is in place puts it
    back."""
    preset = previous_preset(tmp_path)
    rename = pathlib.Path.rename

    def interrupted_staging(self, target):
        if self.name.startswith(".best_preset-") and self.name != ".best_preset-old":
            raise KeyboardInterrupt
        return rename(self, target)

    def save_to_preset(folder):
        (pathlib.Path(folder) / "config.json").write_text("{}")

    monkeypatch.setattr(pathlib.Path, "rename", interrupted_staging)
    with pytest.raises(KeyboardInterrupt):
        callbacks.save_model(None, preset, save_to_preset)
    assert_previous_preset(tmp_path, preset)


def test_a_stream_state_that_fails_halfway_keeps_the_previous_state(tmp_path):
    """The train stream's position at each checkpoint (`BatchStream.save`):
    a failed write leaves the last whole state, and no half-made one."""
    import tensorflow as tf
    from _text_input import stream as text_stream

    batches = tf.data.Dataset.range(100).batch(2)
    stream = text_stream.BatchStream(
        tf.data.Dataset.zip((batches,)), 1, tmp_path / "stream"
    )
    stream.take()  # a whole state: step-1

    def write(prefix):
        write_half(prefix + ".index")
        raise DiskFull

    stream.checkpoint = types.SimpleNamespace(write=write)
    with pytest.raises(DiskFull):
        stream.take()
    folders = tmp_path / "stream"
    assert sorted(p.name for p in folders.iterdir()) == ["step-1"]
    position = json.loads((folders / "step-1" / "position.json").read_text())
    assert position == {"step": 1, "replay": False}
