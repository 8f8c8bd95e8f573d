"""LoRA at its edges: a target name that matches only layers LoRA cannot
adapt (a norm, the spatial gating unit) is refused as a name that matches
nothing is, before anything is frozen, on the builders' models and on the
keras-hub backbone; and the factors an --lora-rank run keeps beside its
backup survive an interruption between the factors' write and the
backup's."""

import re

import keras
import numpy as np
import pytest

from keras_gmlp.applications import enable_lora
from keras_gmlp.applications.gmlp import gMLP

# Layers with weights but no `enable_lora`: every block's norm, its spatial
# gating unit (whose own norm is also "norm").
NOT_ADAPTABLE = [["norm"], ["spatial_gating_unit"], ["norm", "spatial_gating_unit"]]


def image_model():
    return gMLP(
        num_blocks=2,
        hidden_dim=8,
        intermediate_dim=16,
        patch_size=4,
        input_shape=(8, 8, 3),
        classes=3,
        weights=None,
        classifier_activation=None,
    )


def text_backbone():
    from keras_gmlp.models import gMLPBackbone

    return gMLPBackbone(
        vocabulary_size=20,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
    )


def trainable_paths(model):
    return sorted(w.path for w in model.trainable_weights)


@pytest.mark.parametrize("names", NOT_ADAPTABLE)
@pytest.mark.parametrize("kind", ["builder", "backbone"])
def test_names_of_layers_lora_cannot_adapt_are_refused(names, kind):
    if kind == "builder":
        model = image_model()
        adapt = lambda: enable_lora(model, 2, target_layer_names=names)  # noqa: E731
    else:
        model = text_backbone()
        adapt = lambda: model.enable_lora(2, target_layer_names=names)  # noqa: E731
    # The layers exist, with weights.
    assert all(any(f"/{name}/" in w.path for w in model.weights) for name in names)
    trainable = trainable_paths(model)
    with pytest.raises(
        ValueError, match=rf"found no layer .* named {re.escape(repr(names))}"
    ):
        adapt()
    assert trainable_paths(model) == trainable
    assert not any("lora" in w.path for w in model.weights)


def lora_dense():
    # Named as a resumed process (a fresh one) names them.
    layers = [keras.Input((3,)), keras.layers.Dense(2, name="dense")]
    model = keras.Sequential(layers, name="model")
    model.layers[0].enable_lora(1)
    return model


def fill(model, value):
    for variable in model.weights:
        variable.assign(np.full(variable.shape, value, "float32"))


def saved_epochs(folder):
    return sorted(int(p.stem.split("-")[-1]) for p in folder.glob("lora-epoch-*.npz"))


def test_lora_factors_survive_an_interruption_between_the_two_writes(tmp_path):
    """At the end of epoch k (0-based) the factors go to lora-epoch-(k+1)
    before the backup names epoch k + 1; interrupted between the two, the
    backup still names epoch k, whose factors must still be there."""
    from _shared.lora_backup import LoraFactorBackup

    model = lora_dense()
    backup = LoraFactorBackup(tmp_path)
    backup.set_model(model)
    backup.on_train_begin()
    values = {}
    for epoch in range(3):
        backup.on_epoch_begin(epoch)
        fill(model, float(epoch + 1))
        values[epoch + 1] = float(epoch + 1)
        backup.on_epoch_end(epoch)
        # The file just written and the one before it (the backup may still
        # name it).
        assert saved_epochs(tmp_path) == list(range(max(1, epoch), epoch + 2))
    # Interrupted after lora-epoch-3 was written, before the backup named
    # epoch 3: the resumed fit starts at epoch 2, from lora-epoch-2.
    resumed = lora_dense()
    fill(resumed, 0.0)
    restore = LoraFactorBackup(tmp_path)
    restore.set_model(resumed)
    restore.on_train_begin()
    restore.on_epoch_begin(2)
    for variable in resumed.weights:
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(variable), np.full(variable.shape, values[2])
        )


def two_dense():
    """A LoRA layer beside a layer without LoRA."""
    layers = [
        keras.Input((3,)),
        keras.layers.Dense(2, name="dense"),
        keras.layers.Dense(2, name="other"),
    ]
    model = keras.Sequential(layers, name="model")
    model.layers[0].enable_lora(1)
    return model


def test_the_variables_kept_are_those_of_the_lora_layers_only():
    from _shared.lora_backup import lora_layer_variables

    model = two_dense()
    lora = {id(v) for v in model.layers[0].weights}
    assert len(lora) == 4  # kernel, bias and the two factors
    kept = lora_layer_variables(model)
    assert [id(v) for v in kept] == [id(v) for v in model.weights if id(v) in lora]
    plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert lora_layer_variables(plain) == []


def restoring(folder, model=None):
    from _shared.lora_backup import LoraFactorBackup

    backup = LoraFactorBackup(folder)
    backup.set_model(model or lora_dense())
    backup.on_train_begin()
    return backup


def test_only_a_resumed_fit_loads_factors_at_its_first_epoch(tmp_path):
    # A fresh fit reads no file, and a resumed one reads only at its first
    # epoch (no lora-epoch-3 is asked for).
    restoring(tmp_path).on_epoch_begin(0)
    writer = restoring(tmp_path)
    fill(writer.model, 5.0)
    writer.on_epoch_end(1)  # lora-epoch-2
    backup = restoring(tmp_path)
    fill(backup.model, 0.0)
    backup.on_epoch_begin(2)
    fill(backup.model, 1.0)
    backup.on_epoch_begin(3)
    for variable in backup.model.weights:
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), 1.0)


def damaged_message(path, reason):
    return f"{path} is damaged ({reason}); rerun with --restart to start over"


def test_damaged_factors_are_refused_with_the_reason(tmp_path, monkeypatch):
    path = tmp_path / "lora-epoch-2.npz"
    with pytest.raises(SystemExit) as raised:
        restoring(tmp_path).on_epoch_begin(2)
    assert str(raised.value) == damaged_message(
        path, f"[Errno 2] No such file or directory: '{path}'"
    )
    other = tmp_path / "other"
    renamed = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="x")])
    renamed.layers[0].enable_lora(1)
    restoring(other, renamed).on_epoch_end(1)
    # Factors of another model: a variable's array is missing.
    (other / "lora-epoch-2.npz").rename(path)
    with pytest.raises(SystemExit) as raised:
        restoring(tmp_path).on_epoch_begin(2)
    assert str(raised.value).startswith(f"{path} is damaged (")
    assert "is not a file in the archive" in str(raised.value)
    for data in (b"", b"PK\x03\x04 cut short", b"not an npz file"):
        path.write_bytes(data)
        with pytest.raises(SystemExit) as raised:
            restoring(tmp_path).on_epoch_begin(2)
        assert str(raised.value).startswith(f"{path} is damaged (")
    import _shared.lora_backup as lora_backup

    def unreadable(path):
        raise OSError()  # no errno, no message

    monkeypatch.setattr(lora_backup.np, "load", unreadable)
    with pytest.raises(SystemExit) as raised:
        restoring(tmp_path).on_epoch_begin(2)
    assert str(raised.value) == damaged_message(path, "OSError")


def test_a_process_that_does_not_write_keeps_no_factors(tmp_path):
    from _shared import files

    folder = tmp_path / "backup"
    backup = restoring(folder)
    files.set_writer(False)
    try:
        backup.on_epoch_end(0)
        assert not folder.exists()
        folder.mkdir()
        (folder / "lora-epoch-1.npz").write_bytes(b"kept")
        backup.on_epoch_end(3)
    finally:
        files.set_writer(True)
    assert [p.name for p in folder.iterdir()] == ["lora-epoch-1.npz"]
    # The writer makes the folder and its parents.
    writer = restoring(tmp_path / "a" / "b")
    writer.on_epoch_end(0)
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["lora-epoch-1.npz"]
