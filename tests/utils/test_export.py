"""Refused exports: one line that says why, which backend works and what to
install; the library's own classes and `export_model` refuse before Keras
writes anything."""

import os
import re

import keras
import numpy as np
import pytest

from keras_gmlp.utils import export
from keras_gmlp.utils.export import check_export
from tests.utils.tiny_image_models import builder_model
from tests.utils.tiny_image_models import keras_hub_classifier

TENSORFLOW_WORKS = (
    r"On the TensorFlow backend \(KERAS_BACKEND=tensorflow\) the formats "
    r"'tf_saved_model', 'litert', 'onnx' \(pip install tf2onnx onnx\) and "
    r"'openvino' \(pip install openvino\) work: save the model as `\.keras`, "
    r"load it there and export it\.$"
)

REFUSALS = [
    ("torch", "tf_saved_model", "SavedModel export through torch.export fails"),
    ("jax", "tf_saved_model", "TensorFlow cannot run the SavedModel that jax writes"),
    ("jax", "openvino", "cannot convert the XlaCallModule op that jax2tf writes"),
    ("jax", "litert", "LiteRT export needs the TensorFlow or PyTorch backend"),
    ("jax", "torch", "torch.export, which needs the PyTorch backend"),
    ("tensorflow", "torch", "torch.export, which needs the PyTorch backend"),
]


@pytest.mark.parametrize("backend, format, reason", REFUSALS)
def test_refusal_by_backend_names_the_cause_and_the_backend_to_use(
    backend, format, reason
):
    with pytest.raises(ValueError) as error:
        check_export(format, backend)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"Cannot export to '{format}' on the {backend} backend: ")
    assert reason in message
    assert re.search(TENSORFLOW_WORKS, message)


@pytest.mark.parametrize(
    "backend, format, absent, install",
    [
        ("tensorflow", "onnx", "tf2onnx", "tf2onnx"),
        ("tensorflow", "openvino", "openvino", "openvino"),
        ("jax", "onnx", "jax2onnx", "jax2onnx"),
        ("torch", "litert", "litert_torch", "litert-torch"),
    ],
)
def test_missing_package_says_what_to_install(
    backend, format, absent, install, monkeypatch
):
    # Every other package counts as installed, so the message names only
    # `absent` whatever this environment holds; and Keras is new enough.
    monkeypatch.setattr(keras, "version", lambda: "3.15.1")
    monkeypatch.setattr(
        export, "find_spec", lambda name: None if name == absent else object()
    )
    with pytest.raises(
        ImportError,
        match=rf"^Exporting to '{format}' on the {backend} backend needs "
        rf"{install} \(not installed\): pip install {install}\. ",
    ):
        check_export(format, backend)


@pytest.mark.parametrize(
    "backend, version, oldest",
    [("torch", "3.14.2", "3.15"), ("jax", "3.13.0", "3.14")],
)
def test_onnx_refused_with_an_older_keras(backend, version, oldest, monkeypatch):
    monkeypatch.setattr(keras, "version", lambda: version)
    with pytest.raises(ValueError) as error:
        check_export("onnx", backend)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        f"Cannot export to 'onnx' on the {backend} backend with Keras {version}: "
        f"it needs Keras {oldest} or later ("
    )
    assert "pip install -U keras." in message
    assert re.search(TENSORFLOW_WORKS, message)


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_onnx_accepted_on_every_backend_with_keras_3_15(backend, monkeypatch):
    monkeypatch.setattr(keras, "version", lambda: "3.15.1")
    monkeypatch.setattr(export, "find_spec", lambda name: object())
    check_export("onnx", backend)


def test_unknown_format_lists_the_formats():
    with pytest.raises(
        ValueError,
        match=r"^Unknown export format 'savedmodel'; Keras' formats are "
        r"tf_saved_model, onnx, openvino, litert, torch\. On the TensorFlow",
    ):
        check_export("savedmodel", "tensorflow")


# A format that fails on each backend, refused on the current one.
FAILING = {"tensorflow": "torch", "jax": "openvino", "torch": "tf_saved_model"}


def test_models_refuse_before_keras_writes_anything(tmp_path):
    """The keras-hub classes' and the builders' models' `export` refuse at
    once, and leave no file behind."""
    backend = keras.config.backend()
    backbone = keras_hub_classifier().backbone
    builder = builder_model()
    builder(np.zeros((1, 16, 16, 3), "float32"))
    path = str(tmp_path / "artifact")
    for run in (
        lambda: backbone.export(path, format=FAILING[backend]),
        lambda: builder.export(path, format=FAILING[backend]),
    ):
        with pytest.raises(ValueError, match=f"on the {backend} backend"):
            run()
        assert not os.path.exists(path)
