"""
Title: Saving, switching backends and exporting gMLP models
Author: keras-gmlp contributors
Date created: 2026/11/23
Last modified: 2026/11/27
Description: Save a gMLP model on one backend, load it on another, and export it to SavedModel, ONNX and LiteRT for serving.
Accelerator: None
"""

"""
## Introduction

A `.keras` file holds a model's config and weights, not backend code, so a
model trained with JAX loads under PyTorch or TensorFlow. For serving
without Keras, `model.export()` writes a TensorFlow SavedModel, an ONNX
file or a LiteRT (TFLite) flatbuffer. This guide does both, runs every
artifact with its own runtime, and checks that its outputs match the Keras
model's to 1e-4.

Which export formats work depends on the backend the model lives in:

| Backend | `tf_saved_model` | `onnx` | `litert` |
| --- | --- | --- | --- |
| TensorFlow | yes | yes (tf2onnx) | yes |
| JAX | writes, but TensorFlow cannot run it (the exact GELU's `erf`) | yes (jax2onnx) | refused by Keras |
| PyTorch | fails in Keras' `torch.export` bridge | yes (`torch.onnx`) | needs `litert-torch` |

ONNX alone exports from any backend (`pip install "keras-gmlp[onnx]"` for
the converters). For all three formats the recipe on every backend is: save
the `.keras` file, load it under the TensorFlow backend, and export from
there. On the TensorFlow backend
that happens in this process; on JAX and PyTorch, in a subprocess (a Keras
process has one backend). `KERAS_GMLP_GUIDE_FAST=1` uses a smaller model.
"""

"""
## Setup
"""

import inspect
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import keras
import numpy as np
from sklearn.datasets import load_digits

from keras_gmlp.applications.gmlp import gMLP

FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
BACKEND = keras.config.backend()
workdir = tempfile.mkdtemp()
keras.utils.set_random_seed(0)

"""
## A model to serve

A small gMLP classifier for scikit-learn's 8x8 handwritten digits, trained
for a moment: the digits as RGB images in `[0, 255]` (the model scales
them itself).
"""

digits = load_digits()
images = np.repeat(digits.images[..., None] * (255.0 / 16.0), 3, axis=-1)
images = images.astype("float32")
model = gMLP(
    num_blocks=2,
    hidden_dim=32 if FAST else 64,
    intermediate_dim=64 if FAST else 256,
    patch_size=2,
    input_shape=(8, 8, 3),
    classes=10,
    name="gmlp_digits",
)
model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(images, digits.target, batch_size=64, epochs=1 if FAST else 10, verbose=2)
x = images[:8]
expected = keras.ops.convert_to_numpy(model(x))

"""
## Save on one backend, load on another

`model.save()` writes the `.keras` file. A second Python process with
another `KERAS_BACKEND` loads it after `import keras_gmlp` (which registers
the library's layers with Keras) and runs the same images.
"""

model_path = os.path.join(workdir, "gmlp_digits.keras")
model.save(model_path)
np.save(os.path.join(workdir, "x.npy"), x)
LOAD_AND_PREDICT = """
import sys, keras, numpy as np
import keras_gmlp
model = keras.saving.load_model(sys.argv[1])
np.save(sys.argv[3], keras.ops.convert_to_numpy(model(np.load(sys.argv[2]))))
"""
other_backend = {"tensorflow": "jax", "jax": "tensorflow", "torch": "jax"}[BACKEND]
other_path = os.path.join(workdir, "other.npy")
subprocess.run(
    [
        sys.executable,
        "-c",
        LOAD_AND_PREDICT,
        model_path,
        workdir + "/x.npy",
        other_path,
    ],
    env=dict(os.environ, KERAS_BACKEND=other_backend),
    check=True,
)
cross_backend_max_abs_diff = float(np.abs(np.load(other_path) - expected).max())
print(
    f"Saved on {BACKEND}, loaded on {other_backend}: "
    f"max |difference| {cross_backend_max_abs_diff:.2e}"
)

"""
## Export and run the artifacts

`model.export(path, format=...)` traces the model's forward pass. Each
artifact is then run without Keras: the SavedModel with
`tf.saved_model.load`, the ONNX file with `onnxruntime`, the LiteRT file
with TensorFlow's interpreter (its batch size is fixed at 1, so it runs one
image at a time). The input signature leaves the batch size free.
"""


def run_artifact(export_format, path, x):
    if export_format == "tf_saved_model":
        import tensorflow as tf

        artifact = tf.saved_model.load(path)  # keeps its variables alive
        return np.asarray(artifact.serve(x))
    if export_format == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(path)
        return session.run(None, {session.get_inputs()[0].name: x})[0]
    import tensorflow as tf

    runner = tf.lite.Interpreter(model_path=path).get_signature_runner()
    (input_name,) = runner.get_input_details()
    rows = [runner(**{input_name: x[i : i + 1]}) for i in range(len(x))]
    return np.concatenate([next(iter(row.values())) for row in rows])


def export_and_run(model, x, expected, directory):
    """Exports to every format; returns {format: max |artifact - Keras|}."""
    suffixes = {"tf_saved_model": "", "onnx": ".onnx", "litert": ".tflite"}
    signature = [keras.InputSpec(shape=(None,) + x.shape[1:], dtype="float32")]
    diffs = {}
    for export_format, suffix in suffixes.items():
        path = os.path.join(directory, "gmlp_digits" + suffix)
        model.export(
            path, format=export_format, input_signature=signature, verbose=False
        )
        diffs[export_format] = float(
            np.abs(run_artifact(export_format, path, x) - expected).max()
        )
    return diffs


"""
On TensorFlow we call it here. On JAX and PyTorch we run the same two
functions in a TensorFlow-backend subprocess on the `.keras` file we saved.
"""

if BACKEND == "tensorflow":
    export_diffs = export_and_run(model, x, expected, workdir)
else:
    np.save(os.path.join(workdir, "expected.npy"), expected)
    worker = "\n".join(
        [
            "import json, os, sys, keras, numpy as np",
            "import keras_gmlp",
            inspect.getsource(run_artifact),
            inspect.getsource(export_and_run),
            "d = sys.argv[1]",
            "model = keras.saving.load_model(os.path.join(d, 'gmlp_digits.keras'))",
            "x, e = np.load(d + '/x.npy'), np.load(d + '/expected.npy')",
            "print(json.dumps(export_and_run(model, x, e, d)))",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", worker, workdir],
        env=dict(os.environ, KERAS_BACKEND="tensorflow"),
        check=True,
        capture_output=True,
        text=True,
    )
    export_diffs = json.loads(result.stdout.strip().splitlines()[-1])
for export_format, diff in export_diffs.items():
    print(f"{export_format:15} max |artifact - Keras on {BACKEND}| = {diff:.2e}")
export_max_abs_diff = max(export_diffs.values())
num_export_formats = len(export_diffs)

"""
Every artifact agrees with the Keras model to float32 round-off. Serve the
SavedModel with TensorFlow Serving, the ONNX file with any ONNX runtime,
and the `.tflite` file on mobile and edge devices.

## int8 weights

`model.quantize("int8")` stores each Dense kernel as int8 with one scale
per output channel and quantizes the activations on the fly; the norms
and the spatial gating unit's token-mixing matrix stay float. The model
stays a Keras model: it saves, reloads and exports as before. Quantize a
copy to keep the float one.
"""

int8_model = keras.saving.load_model(model_path, compile=False)
int8_model.quantize("int8")
int8_model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
int8_path = os.path.join(workdir, "gmlp_digits_int8.keras")
int8_model.save(int8_path)
int8_error = np.abs(keras.ops.convert_to_numpy(int8_model(x)) - expected).max()
int8_accuracy = int8_model.evaluate(images, digits.target, verbose=0)[1]
float_accuracy = model.evaluate(images, digits.target, verbose=0)[1]
int8_accuracy_change = abs(int8_accuracy - float_accuracy)
print(
    f"int8: {os.path.getsize(int8_path) / os.path.getsize(model_path):.2f}x the "
    f"file, max |int8 - float| {int8_error:.3f}, accuracy {int8_accuracy:.3f} "
    f"(float {float_accuracy:.3f})"
)

"""
On the programs' models (benchmarks/lora_and_quantization.py) int8 kept the
digits' test accuracy and the causal LM's perplexity (25.22 against 25.22)
on every backend, with files 0.41-0.46x (images) and 0.32x (text) the size;
speed is another matter: on these CPUs int8 was no faster, and at batch 32
slower (benchmarks/docs/lora_and_quantization.md). A reloaded int8 model cannot be saved again
in Keras 3.15 (keras-hub's own models neither): keep the float one.

## Text models

The text models export the same way; their spatial projections are built
for `max_sequence_length` tokens, so give the signature that fixed length
(`keras.InputSpec(shape=(None, max_sequence_length))` for each of
`token_ids`, `segment_ids` and `padding_mask`) and pad the inputs to it:
padding does not change the outputs of the real tokens.
"""

"""
## 4-bit weights: int4 and GPTQ

`quantize("int4")` rounds each Dense kernel to 4 bits (a quarter of
float32's size). GPTQ (Frantar et al. 2022) stores 4 bits too but fits
them: block by block it runs calibration windows through the model and
chooses each weight to keep the block's outputs. Keras finds the blocks
through `get_quantization_layer_structure`, which the gMLP language models
answer, so GPTQ is one `quantize` call with a `GPTQConfig`. On a small
(untrained) causal LM, the logits' relative error against float32:
"""

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM

rng = np.random.default_rng(0)
calibration = rng.integers(5, 500, (64, 32)).astype("int32")
lm_inputs = {"token_ids": rng.integers(5, 500, (32, 32)).astype("int32")}
lm_inputs["padding_mask"] = np.ones_like(lm_inputs["token_ids"])


def lm_logits(mode=None, config=None):
    keras.utils.set_random_seed(0)
    lm = gMLPCausalLM(gMLPBackbone(500, 2, 64, 256, 32, causal=True, dropout=0.0))
    if mode:
        lm.quantize(mode, config=config)
    return keras.ops.convert_to_numpy(lm(lm_inputs))


float_logits = lm_logits()
int4_error, gptq_error = (
    np.linalg.norm(lm_logits(mode, config) - float_logits)
    / np.linalg.norm(float_logits)
    for mode, config in (
        ("int4", None),
        ("gptq", keras.quantizers.GPTQConfig(
            dataset=calibration, tokenizer=lambda text: text,  # ids already
            weight_bits=4, num_samples=64, sequence_length=32, group_size=-1,
        )),
    )
)  # fmt: skip
gptq_closer_than_int4 = bool(gptq_error < int4_error)
print(f"logits' relative error: int4 {int4_error:.3f}, GPTQ {gptq_error:.3f}")

"""
`train_causal_lm.py --quantize gptq` calibrates on its first 128 train
windows and reports the held-out perplexity beside float32's. In Keras 3.15
a GPTQ model does not load from a `.keras` file again: quantize after
loading.
"""
