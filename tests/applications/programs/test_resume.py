"""Resuming the programs in applications/: what a rerun in the same
--output-dir does with the state it finds (run_state.json, history.csv, the
backup), for all four programs, and the atomic backup itself.

Cost per backend: the checks of a stored state stop before any data or
model work; one tiny pretraining run restarts a finished run, one stops
at a damaged backup, one in-process fit of a tiny model checks the backup.
The post-training resumes are in each program's own test file, next to
the run they compare with.
"""

import json
import shutil

import keras
import numpy as np
import pytest
from _shared import run_state
from _shared.callbacks import TrainingBackup

from tests.applications.programs._text_program_helpers import fast_pretraining_dir
from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs.helpers import describe
from tests.applications.programs.helpers import run_program

PROGRAMS = (
    "pretrain_mlm",
    "train_causal_lm",
    "finetune_text_classifier",
    "train_image_classifier",
)


def program_flags(name, tmp_path):
    """The smallest flags of `name`, and a fake --preset where it needs one
    (the checks here stop before it is read)."""
    flags = ["--fast"]
    if name == "finetune_text_classifier":
        preset = tmp_path / "preset"
        preset.mkdir(exist_ok=True)
        (preset / "config.json").write_text("{}")
        flags += ["--preset", str(preset)]
    return flags


def stored_run(name, tmp_path, stage="training", **changes):
    """An output folder whose run_state.json holds the program's --fast
    model flags (with `changes`) at `stage`; returns (folder, flags)."""
    program = load_program(name)
    output_dir = tmp_path / "out"
    flags = program_flags(name, tmp_path) + ["--output-dir", str(output_dir)]
    _, args = program.parse_args(flags)
    model_flags = {n: getattr(args, n) for n in program.recipe.MODEL_FLAGS}
    model_flags = json.loads(json.dumps(model_flags, default=str))
    model_flags.update(changes)
    state = {"stage": stage, "model_flags": model_flags}
    (output_dir / run_state.STATE_FILE).write_text(json.dumps(state))
    return output_dir, flags


def exit_message(name, flags):
    """The SystemExit of `main(flags)`: (code, message)."""
    with pytest.raises(SystemExit) as raised:
        load_program(name).main(flags)
    code = raised.value.code
    return (1, code) if isinstance(code, str) else (code, None)


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_finished_run_says_so_and_exits_0(name, tmp_path, capsys):
    output_dir, flags = stored_run(name, tmp_path, stage="finished")
    code, _ = exit_message(name, flags)
    assert code == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1, printed
    assert "finished" in printed[0]
    assert str(output_dir / "summary.json") in printed[0]
    assert "--restart" in printed[0]


@pytest.mark.parametrize("name", PROGRAMS)
def test_other_model_flags_are_refused_listing_the_differences(name, tmp_path):
    changes = {"fast": False}
    changes["model" if name != "finetune_text_classifier" else "dropout"] = "other"
    output_dir, flags = stored_run(name, tmp_path, **changes)
    before = sorted(p.name for p in output_dir.iterdir())
    code, message = exit_message(name, flags)
    assert code == 1 and "\n" not in message
    assert str(output_dir) in message and "--restart" in message
    assert "--fast: False -> True" in message
    changed = "--model" if name != "finetune_text_classifier" else "--dropout"
    assert f"{changed}: 'other' -> " in message
    # Refused before any work: nothing was written.
    assert sorted(p.name for p in output_dir.iterdir()) == before


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe\x00garbage\x80",
        b"epoch,loss\n0,1.5,7\n",
        b"epoch,loss\nx,1\n",
        None,
    ],
    ids=["not-utf8", "extra-column", "bad-epoch", "a-folder"],
)
@pytest.mark.parametrize("name", PROGRAMS)
def test_a_damaged_history_is_one_line_naming_it(name, tmp_path, content):
    output_dir, flags = stored_run(name, tmp_path)
    if content is None:
        (output_dir / "history.csv").mkdir()
    else:
        (output_dir / "history.csv").write_bytes(content)
    code, message = exit_message(name, flags)
    assert code == 1 and "\n" not in message
    assert str(output_dir / "history.csv") in message
    assert "--restart" in message


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_damaged_run_state_is_one_line_naming_it(name, tmp_path):
    output_dir, flags = stored_run(name, tmp_path)
    (output_dir / "run_state.json").write_text('{"stage": "trai')
    code, message = exit_message(name, flags)
    assert code == 1 and "\n" not in message
    assert str(output_dir / "run_state.json") in message and "--restart" in message


def test_restart_trains_a_finished_run_again(tmp_path):
    output_dir = tmp_path / "run"
    shutil.copytree(fast_pretraining_dir(), output_dir)
    (output_dir / "backup").write_text("not a folder")  # removed too
    program = load_program("pretrain_mlm")
    flags = ["--fast", "--output-dir", str(output_dir)]
    with pytest.raises(SystemExit) as raised:
        program.main(flags)
    assert raised.value.code == 0
    # A history from a longer run would be kept by a resume; --restart
    # starts from scratch.
    (output_dir / "history.csv").write_text("epoch,loss\n0,9.0\n1,8.0\n2,7.0\n")
    summary = program.main(flags + ["--restart"])
    assert summary["epochs_completed"] == 1
    history = (output_dir / "history.csv").read_text().splitlines()
    assert len(history) == 2 and "9.0" not in history[1].split(",")
    state = json.loads((output_dir / "run_state.json").read_text())
    assert state["stage"] == "finished"
    assert not (output_dir / "backup").exists()
    assert not (output_dir / run_state.TRAINED_WEIGHTS).exists()
    # The same seed and data: the same run as the first one.
    first = json.loads((fast_pretraining_dir() / "summary.json").read_text())
    np.testing.assert_allclose(
        summary["heldout_masked_token_perplexity"],
        first["heldout_masked_token_perplexity"],
        rtol=1e-5,
    )


def damage_backup(output_dir, part):
    """A backup of epoch 1 whose `part` ("weights", "seeds" or "latest")
    holds garbage; returns the damaged file."""
    backup = output_dir / "backup"
    backup.mkdir(parents=True)
    (backup / "latest.json").write_text(json.dumps({"epoch": 1}))
    files = {
        "weights": backup / "epoch-1.weights.h5",
        "seeds": backup / "epoch-1.seeds.npz",
        "latest": backup / "latest.json",
    }
    for path in files.values():
        if path.suffix != ".json":
            path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 4)
    files[part].write_bytes(b"\x00\x01 truncated")
    return files[part]


def test_a_damaged_backup_ends_the_text_program_in_one_line(tmp_path):
    output_dir, flags = stored_run("pretrain_mlm", tmp_path)
    damaged = damage_backup(output_dir, "weights")
    code, message = exit_message("pretrain_mlm", flags)
    assert code == 1 and "\n" not in message
    assert str(damaged) in message and "--restart" in message
    assert not (output_dir / "final_preset").exists()


@pytest.mark.parametrize("part", ["weights", "latest"])
def test_a_damaged_backup_exits_1_with_one_line_and_no_traceback(tmp_path, part):
    output_dir, flags = stored_run("train_image_classifier", tmp_path)
    damaged = damage_backup(output_dir, part)
    result = run_program("train_image_classifier", *flags, timeout=300)
    assert result.returncode == 1, describe(result)
    assert "Traceback" not in result.stderr, describe(result)
    last = result.stderr.strip().splitlines()[-1]
    assert str(damaged) in last and "--restart" in last, describe(result)
    assert not (output_dir / "final.keras").exists()


def tiny_model():
    inputs = keras.Input((3,))
    outputs = keras.layers.Dense(2)(keras.layers.Dropout(0.5, seed=1)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(0.1), "mse")
    return model


def test_an_interrupted_backup_write_leaves_the_previous_epoch_whole(
    tmp_path, monkeypatch
):
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 2), "float32")
    keras.utils.set_random_seed(0)
    model = tiny_model()
    backup = TrainingBackup(tmp_path / "backup")
    model.fit(x, y, epochs=1, callbacks=[backup], verbose=0)
    after_first = [keras.ops.convert_to_numpy(v) for v in model.weights]
    first_files = sorted(p.name for p in backup.backup_dir.iterdir())

    # Killed halfway through writing the second epoch's weights.
    def half_written(self, filepath, **kwargs):
        with open(filepath, "wb") as handle:
            handle.write(b"\x89HDF\r\n\x1a\n half")
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(keras.Model, "save_weights", half_written)
        with pytest.raises(KeyboardInterrupt):
            model.fit(x, y, epochs=2, initial_epoch=1, callbacks=[backup], verbose=0)
    assert sorted(p.name for p in backup.backup_dir.iterdir()) == first_files
    assert backup.completed_epochs() == 1

    keras.utils.set_random_seed(1)
    restored = tiny_model()
    resumed = TrainingBackup(tmp_path / "backup")
    resumed.set_model(restored)
    resumed.restore()
    for variable, expected in zip(restored.weights, after_first):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), expected)
    # The optimizer's state came back too: one step taken.
    assert int(keras.ops.convert_to_numpy(restored.optimizer.iterations)) == 1


def test_patience_counts_epochs_since_the_best_across_the_whole_history():
    from _shared.callbacks import best_epoch
    from _shared.callbacks import patience_ran_out

    rows = {0: {"val_loss": 3.0}, 1: {"val_loss": 2.0}, 2: {"val_loss": 2.5}}
    assert best_epoch(rows, "val_loss", "min") == 1
    assert best_epoch(rows, "val_loss", "max") == 0
    assert patience_ran_out(rows, "val_loss", "min", 1)
    assert not patience_ran_out(rows, "val_loss", "min", 2)
    assert not patience_ran_out(rows, "val_loss", "min", None)
    rows[3] = {"val_loss": 2.0}  # a tie is no improvement
    assert patience_ran_out(rows, "val_loss", "min", 2)
    rows[4] = {"val_loss": float("nan")}
    assert best_epoch(rows, "val_loss", "min") == 1
