"""Checkpoints that do not fit are refused whole, and nothing is loaded."""

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file

from keras_gmlp.applications import load_timm_weights
from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path


def snapshot(model):
    return [keras.ops.convert_to_numpy(variable) for variable in model.weights]


def assert_unchanged(model, before):
    for variable, value in zip(model.weights, before):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(variable), value, err_msg=variable.path
        )


def test_missing_and_unexpected_keys_are_listed(family):
    state = load_file(fixture_path(family, ".safetensors"))
    del state["blocks.1.norm1.weight" if family == "mixer" else "blocks.1.norm.weight"]
    del state["head.bias"]
    state["blocks.2.extra.weight"] = np.zeros(3, "float32")
    model = build_tiny(family)
    before = snapshot(model)
    with pytest.raises(ValueError) as error:
        load_timm_weights(model, state)
    message = str(error.value)
    assert "no weights were loaded" in message
    assert "missing from the checkpoint (2)" in message
    assert "head.bias" in message
    assert "not used by the model (1)" in message
    assert "blocks.2.extra.weight" in message
    assert_unchanged(model, before)


def test_mismatched_shapes_are_listed(family):
    state = load_file(fixture_path(family, ".safetensors"))
    # Four classes instead of ten, and a wider stem.
    model = build_tiny(family, classes=4)
    before = snapshot(model)
    with pytest.raises(ValueError, match=r"head.weight: checkpoint \(10, 32\)"):
        load_timm_weights(model, state)
    assert_unchanged(model, before)
    state["stem.proj.weight"] = np.zeros((32, 3, 4, 4), "float32")
    model = build_tiny(family)
    before = snapshot(model)
    with pytest.raises(
        ValueError, match=r"stem.proj.weight: checkpoint \(32, 3, 4, 4\)"
    ):
        load_timm_weights(model, state)
    assert_unchanged(model, before)


def test_a_shallower_checkpoint_is_refused(family, tmp_path):
    state = load_file(fixture_path(family, ".safetensors"))
    shallow = {k: v for k, v in state.items() if not k.startswith("blocks.1.")}
    path = str(tmp_path / "shallow.safetensors")
    save_file(shallow, path)
    with pytest.raises(ValueError, match=r"missing from the checkpoint \(\d+\)"):
        build_tiny(family, weights=path)
    model = build_tiny(family)
    before = snapshot(model)
    with pytest.raises(ValueError, match="blocks.1."):
        load_timm_weights(model, path)
    assert_unchanged(model, before)


@pytest.mark.parametrize("suffix", [".safetensors", ".pth"])
def test_a_truncated_file_is_refused(family, tmp_path, suffix):
    import torch

    state = load_file(fixture_path(family, ".safetensors"))
    path = str(tmp_path / f"checkpoint{suffix}")
    if suffix == ".pth":
        torch.save({k: torch.from_numpy(v) for k, v in state.items()}, path)
    else:
        save_file(state, path)
    with open(path, "rb") as file:
        data = file.read()
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])
    model = build_tiny(family)
    before = snapshot(model)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_timm_weights(model, path)
    assert_unchanged(model, before)


def test_a_gmlp_checkpoint_does_not_load_into_a_mixer():
    model = build_tiny("mixer")
    before = snapshot(model)
    with pytest.raises(ValueError, match="mlp_tokens.fc1.weight") as error:
        load_timm_weights(model, fixture_path("gmlp", ".safetensors"))
    assert "gate.proj.weight" in str(error.value)
    assert_unchanged(model, before)


def test_a_pth_without_a_state_dict_is_refused_before_building(
    family, tmp_path, monkeypatch
):
    import torch

    from keras_gmlp.layers import _patch_mlp

    state = load_file(fixture_path(family, ".safetensors"))
    tensors = [torch.from_numpy(v) for v in state.values()]
    model = build_tiny(family)
    before = snapshot(model)
    for kind, saved in [("list", tensors), ("Tensor", tensors[0]), ("int", 3)]:
        path = str(tmp_path / f"{kind}.pth")
        torch.save(saved, path)
        built = []
        message = (
            rf"holds a {kind}, not a state dict.*Received: weights='.*{kind}\.pth'"
        )
        with monkeypatch.context() as patch:
            # Refused before the model is built: no layer is made.
            patch.setattr(
                _patch_mlp,
                "PatchEmbedding",
                lambda *args, built=built, **kwargs: built.append(args),
            )
            with pytest.raises(ValueError, match=message):
                build_tiny(family, weights=path)
        assert built == []
        with pytest.raises(ValueError, match=f"holds a {kind}, not a state dict"):
            load_timm_weights(model, path)
        assert_unchanged(model, before)
