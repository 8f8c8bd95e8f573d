"""`model.export(path, format="onnx")` on every backend, each through its own
converter (TensorFlow: tf2onnx; JAX: jax2onnx; PyTorch: torch.onnx, with the
library's fixes in keras_gmlp/utils/_torch_export.py), for the image
builders and the text models. The export leaves the batch size free; the
file is run by onnxruntime at batch 1 and 3 and compared with the Keras
model's outputs on the same rows. The text inputs are padded (rows of 5, 8
and 3 real tokens in 8).
"""

import keras
import numpy as np
import pytest

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.utils.export import NEEDS_KERAS

IMAGE_SIZE = 16
VOCABULARY_SIZE = 40
SEQUENCE_LENGTH = 8
NUM_MASKS = 2
BATCH_SIZES = (1, 3)


def image_builder(name):
    """A gMLP-S-like (or Mixer) builder model, 2 blocks, 4 patches of 8x8."""
    sizes = dict(num_blocks=2, hidden_dim=8, patch_size=8)
    kwargs = dict(input_shape=(IMAGE_SIZE, IMAGE_SIZE, 3), classes=3)
    if name == "gmlp_builder":
        return gMLP(intermediate_dim=16, **sizes, **kwargs)
    return MLPMixer(tokens_mlp_dim=8, channels_mlp_dim=16, **sizes, **kwargs)


def text_model(name):
    """The backbone (aMLP, 2 blocks) or a task on it, random weights."""
    from keras_gmlp import models

    backbone = models.gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=SEQUENCE_LENGTH,
        attention_dim=4,
        causal=name == "causal_lm",
    )
    if name == "backbone":
        return backbone
    if name == "text_classifier":
        return models.gMLPTextClassifier(backbone, num_classes=3, preprocessor=None)
    task = models.gMLPMaskedLM if name == "masked_lm" else models.gMLPCausalLM
    return task(backbone=backbone, preprocessor=None)


def text_inputs(name):
    """Three padded rows of the inputs `name` takes, by input name."""
    rng = np.random.default_rng(3)
    lengths = np.array([5, SEQUENCE_LENGTH, 3])
    padding_mask = np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None]
    token_ids = rng.integers(5, VOCABULARY_SIZE, (3, SEQUENCE_LENGTH))
    inputs = {
        "token_ids": np.where(padding_mask, token_ids, 0).astype("int32"),
        "padding_mask": padding_mask.astype("int32"),
    }
    if name != "causal_lm":
        inputs["segment_ids"] = np.zeros_like(inputs["token_ids"])
    if name == "masked_lm":
        inputs["mask_positions"] = np.array([[1, 4], [0, 7], [2, 1]], "int32")
    return inputs


def model_and_inputs(name):
    """The model, its three rows of inputs and its export signature."""
    if name.endswith("builder"):
        images = np.random.default_rng(4).uniform(
            0, 255, (3, IMAGE_SIZE, IMAGE_SIZE, 3)
        )
        signature = keras.InputSpec(
            shape=(None, IMAGE_SIZE, IMAGE_SIZE, 3), dtype="float32", name="images"
        )
        return image_builder(name), images.astype("float32"), signature
    inputs = text_inputs(name)
    signature = {
        key: keras.InputSpec(shape=(None,) + value.shape[1:], dtype="int32", name=key)
        for key, value in inputs.items()
    }
    return text_model(name), inputs, signature


def rows(x, count):
    return keras.tree.map_structure(lambda value: value[:count], x)


def run_onnx(path, x):
    """onnxruntime's outputs for `x`, in the order Keras flattens its own
    (a dict's values by sorted key)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(path)
    feed = {}
    for spec in session.get_inputs():
        # tf2onnx prefixes the signature's names (args_0_token_ids).
        key = (
            next((k for k in x if spec.name.endswith(k)), None)
            if isinstance(x, dict)
            else None
        )
        feed[spec.name] = x if key is None else x[key]
    outputs = session.run(None, feed)
    names = [output.name for output in session.get_outputs()]
    if len(outputs) > 1 and all(any(n.endswith(k) for k in KEYS) for n in names):
        outputs = [value for _, value in sorted(zip(names, outputs))]
    return outputs


# The keys of the backbone's outputs, which tf2onnx keeps as output names.
KEYS = ("pooled_output", "sequence_output")

MODELS = [
    "gmlp_builder",
    "mixer_builder",
    "backbone",
    "masked_lm",
    "causal_lm",
    "text_classifier",
]


def keras_is_older_than(version):
    major, minor = keras.version().split(".")[:2]
    return (int(major), int(minor)) < version


@pytest.mark.parametrize("name", MODELS)
def test_onnx_export_matches_keras(name, tmp_path):
    model, x, signature = model_and_inputs(name)
    path = str(tmp_path / f"{name}.onnx")
    oldest = NEEDS_KERAS.get((keras.config.backend(), "onnx"), ((0, 0),))[0]
    if keras_is_older_than(oldest):  # CI's floor versions
        with pytest.raises(ValueError, match=r"needs Keras \d+\.\d+ or later"):
            model.export(path, format="onnx", input_signature=[signature])
        return
    model.export(path, format="onnx", input_signature=[signature], verbose=False)
    if keras.config.backend() == "torch":
        # The export's fixes last only as long as the export.
        from keras_gmlp.utils._torch_export import PARAMETERS_NAME

        assert PARAMETERS_NAME not in dict(model.named_children())
    for count in BATCH_SIZES:
        expected = keras.tree.flatten(model(rows(x, count), training=False))
        got = run_onnx(path, rows(x, count))
        assert len(got) == len(expected), name
        for want, have in zip(expected, got):
            np.testing.assert_allclose(
                have,
                keras.ops.convert_to_numpy(want),
                rtol=1e-4,
                atol=1e-5,
                err_msg=f"{name}, batch {count}",
            )


def torch_onnx_refuses(module, x):
    """Whether `torch.onnx.export` (TorchScript) refuses `module` on `x`, the
    batch axis free, as it does unless a function is registered for it."""
    import io

    import torch

    try:
        torch.onnx.export(
            module,
            (x,),
            io.BytesIO(),
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            dynamic_axes={"x": {0: "batch"}},
        )
    except Exception:  # torch's errors for unsupported nodes vary by kind
        return True
    return False


@pytest.mark.skipif(
    keras.config.backend() != "torch", reason="torch.onnx's registry is PyTorch's"
)
def test_a_torch_onnx_export_leaves_nothing_registered_in_torch_onnx(tmp_path):
    """The ONNX functions an export registers for layer_norm (its shape
    traced) and take_along_dim serve that export only: afterwards, and after
    an export that fails, torch.onnx refuses both again in a plain module."""
    import torch
    import torch.nn.functional as F

    class LayerNorm(torch.nn.Module):
        def forward(self, x):
            return F.layer_norm(x, x.shape[-1:])

    class TakeAlong(torch.nn.Module):
        def forward(self, x):
            return torch.take_along_dim(x, torch.zeros_like(x, dtype=torch.long), 1)

    if keras_is_older_than(NEEDS_KERAS.get(("torch", "onnx"), ((0, 0),))[0]):
        pytest.skip("this Keras exports no ONNX on PyTorch")
    x = torch.randn(2, 5)
    modules = (LayerNorm(), TakeAlong())
    assert all(torch_onnx_refuses(module, x) for module in modules)
    model, _, signature = model_and_inputs("mixer_builder")
    model.export(str(tmp_path / "a.onnx"), format="onnx", input_signature=[signature])
    assert all(torch_onnx_refuses(module, x) for module in modules)
    # torch.onnx fails to write the file: the export ends with an error.
    with pytest.raises(FileNotFoundError):
        model.export(
            str(tmp_path / "missing" / "a.onnx"),
            format="onnx",
            input_signature=[signature],
        )
    assert all(torch_onnx_refuses(module, x) for module in modules)
