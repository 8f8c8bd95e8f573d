"""The converted models reproduce timm's logits (tests/fixtures/make_timm_fixtures.py)."""

import keras
import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from keras_gmlp.applications import load_timm_weights
from keras_gmlp.applications import timm_state_dict
from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path


def test_safetensors_checkpoint_reproduces_timm_logits(family):
    golden = np.load(fixture_path(family, ".npz"))
    model = build_tiny(family, weights=fixture_path(family, ".safetensors"))
    logits = keras.ops.convert_to_numpy(model(golden["images"]))
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_torch_checkpoint_reproduces_timm_logits(family, tmp_path):
    golden = np.load(fixture_path(family, ".npz"))
    state = load_file(fixture_path(family, ".safetensors"))
    path = str(tmp_path / "checkpoint.pth")
    # Wrapped and prefixed as training scripts save them.
    torch.save(
        {"state_dict": {f"module.{k}": torch.from_numpy(v) for k, v in state.items()}},
        path,
    )
    model = build_tiny(family, weights=path)
    logits = keras.ops.convert_to_numpy(model(golden["images"]))
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_softmax_top_and_external_preprocessing(family):
    golden = np.load(fixture_path(family, ".npz"))
    path = fixture_path(family, ".safetensors")
    model = build_tiny(
        family,
        weights=path,
        classifier_activation="softmax",
        include_preprocessing=False,
    )
    probabilities = keras.ops.convert_to_numpy(model(golden["images"] / 127.5 - 1))
    expected = np.exp(golden["logits"])
    expected /= expected.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)


def test_export_returns_the_timm_state_dict(family):
    model = build_tiny(family, weights=fixture_path(family, ".safetensors"))
    exported = timm_state_dict(model)
    state = load_file(fixture_path(family, ".safetensors"))
    assert set(exported) == set(state)
    for key, value in state.items():
        np.testing.assert_array_equal(exported[key], value, err_msg=key)


def test_exported_safetensors_file_holds_timm_tensors(family, tmp_path):
    """safetensors writes an array's raw memory: the exported arrays must be
    row-major, or the file holds transposed values. Written by either
    safetensors front end, the file holds exactly the tensors timm saved for
    the golden logits, and loads back to those logits."""
    from safetensors.numpy import save_file as save_numpy
    from safetensors.torch import save_file as save_torch

    golden = np.load(fixture_path(family, ".npz"))
    source = load_file(fixture_path(family, ".safetensors"))
    exported = timm_state_dict(
        build_tiny(family, weights=fixture_path(family, ".safetensors"))
    )
    for key in source:
        assert exported[key].flags.c_contiguous, key
    numpy_path = str(tmp_path / "numpy.safetensors")
    save_numpy(exported, numpy_path)
    torch_path = str(tmp_path / "torch.safetensors")
    save_torch({k: torch.from_numpy(v) for k, v in exported.items()}, torch_path)
    for path in (numpy_path, torch_path):
        written = load_file(path)
        assert set(written) == set(source)
        for key, value in source.items():
            assert written[key].shape == value.shape, key
            assert written[key].tobytes() == value.tobytes(), key
    model = build_tiny(family, weights=numpy_path)
    logits = keras.ops.convert_to_numpy(model(golden["images"]))
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_feature_extractor_ignores_the_head(family):
    golden = np.load(fixture_path(family, ".npz"))
    state = load_file(fixture_path(family, ".safetensors"))
    model = build_tiny(family, include_top=False, pooling="avg")
    load_timm_weights(model, state)
    features = keras.ops.convert_to_numpy(model(golden["images"]))
    # The head is linear: the pooled features times timm's head give its logits.
    logits = features @ state["head.weight"].T + state["head.bias"]
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_stays_close(family, policy):
    golden = np.load(fixture_path(family, ".npz"))
    keras.config.set_dtype_policy(policy)
    model = build_tiny(family, weights=fixture_path(family, ".safetensors"))
    logits = keras.ops.convert_to_numpy(
        keras.ops.cast(model(golden["images"]), "float32")
    )
    assert np.max(np.abs(logits - golden["logits"])) < 0.1
