"""Which `model.export` formats work for this library's models on each
backend, and a check that refuses the others in one line saying what to do.

Keras' own refusals do not say which backend or package would work
(`model.export(..., format="tf_saved_model")` on torch ends in a
torch.export `UserError`), so the library's models (the builders' and the
keras-hub classes) run `check_export` before Keras exports. The tables below
are what tests/deployment checks with Keras 3.15.

ONNX works from every backend, each through Keras' own converter: tf2onnx
on TensorFlow, jax2onnx on JAX (`pip install "keras-gmlp[onnx]"` brings
both) and `torch.onnx` on PyTorch. On JAX and PyTorch the models' `export`
first makes them traceable (`_exportable` below says how), so the export
of a model loaded as plain Keras, which skips it, can fail where the
library's own classes succeed.
"""

import contextlib
from importlib.util import find_spec

import keras

from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.utils._keras_version import keras_version

# What every refusal offers instead: the backend where each format is
# tested end to end (exported, then run by its own runtime).
ON_TENSORFLOW = (
    "On the TensorFlow backend (KERAS_BACKEND=tensorflow) the formats "
    "'tf_saved_model', 'litert', 'onnx' (pip install tf2onnx onnx) and "
    "'openvino' (pip install openvino) work: save the model as `.keras`, "
    "load it there and export it"
)

# Formats Keras offers that fail for these models on a backend, and why.
REFUSED = {
    # It exports, but the artifact does not run: jax 0.10.2 writes GELU's
    # erf as a `vhlo.composite_v2` op and jax 0.12 its shape assertions as
    # `vhlo.custom_call_v2`, and TensorFlow 2.21's XlaCallModule cannot
    # deserialize either.
    ("jax", "tf_saved_model"): (
        "TensorFlow cannot run the SavedModel that jax writes (its "
        "XlaCallModule cannot deserialize jax's StableHLO ops)"
    ),
    ("jax", "litert"): "Keras' LiteRT export needs the TensorFlow or PyTorch backend",
    ("jax", "openvino"): (
        "OpenVINO cannot convert the XlaCallModule op that jax2tf writes"
    ),
    ("jax", "torch"): "format 'torch' is torch.export, which needs the PyTorch backend",
    ("tensorflow", "torch"): (
        "format 'torch' is torch.export, which needs the PyTorch backend"
    ),
    ("torch", "tf_saved_model"): (
        "Keras' SavedModel export through torch.export fails on these models"
    ),
}

# The oldest Keras that exports these models to a format on a backend, and
# what the releases before it do.
NEEDS_KERAS = {
    ("jax", "onnx"): (
        (3, 14),
        "earlier releases convert through jax2tf, which this library does not support",
    ),
    ("torch", "onnx"): (
        (3, 15),
        "Keras 3.14 refuses dict inputs, which the text models take, and 3.13 "
        "fixes the batch size at 1",
    ),
}

# The optional packages each (backend, format) needs: (module, pip name).
NEEDS = {
    ("tensorflow", "onnx"): (("tf2onnx", "tf2onnx"), ("onnx", "onnx")),
    ("jax", "onnx"): (("jax2onnx", "jax2onnx"),),
    ("tensorflow", "openvino"): (("openvino", "openvino"),),
    ("torch", "openvino"): (("openvino", "openvino"),),
    ("torch", "litert"): (("litert_torch", "litert-torch"),),
}

FORMATS = ("tf_saved_model", "onnx", "openvino", "litert", "torch")


def check_export(format, backend=None):
    """Raises unless Keras can export this library's models to `format` on
    `backend` (default: the current one).

    Args:
        format: an export format of `keras.Model.export`.
        backend: `"tensorflow"`, `"jax"` or `"torch"`; defaults to
            `keras.config.backend()`.

    Raises:
        ValueError: an unknown format, or one that fails on this backend
            or with the installed Keras; the message names the backend to
            use instead.
        ImportError: a package the export needs is missing; the message
            says what to install.

    Examples:

    ```python
    keras_gmlp.utils.export.check_export("tf_saved_model")  # on torch: ValueError
    ```
    """
    backend = backend or keras.config.backend()
    if format not in FORMATS:
        raise ValueError(
            f"Unknown export format {format!r}; Keras' formats are "
            f"{', '.join(FORMATS)}. {ON_TENSORFLOW}."
        )
    if (backend, format) in REFUSED:
        raise ValueError(
            f"Cannot export to {format!r} on the {backend} backend: "
            f"{REFUSED[backend, format]}. {ON_TENSORFLOW}."
        )
    _check_keras_version(format, backend)
    missing = [
        pip for module, pip in NEEDS.get((backend, format), ()) if not find_spec(module)
    ]
    if missing:
        raise ImportError(
            f"Exporting to {format!r} on the {backend} backend needs "
            f"{' and '.join(missing)} (not installed): pip install "
            f"{' '.join(missing)}. {ON_TENSORFLOW}."
        )


def _check_keras_version(format, backend):
    """Raises a one-line ValueError if the installed Keras is older than
    `NEEDS_KERAS` asks for `format` on `backend`."""
    if (backend, format) not in NEEDS_KERAS:
        return
    oldest, before = NEEDS_KERAS[backend, format]
    if keras_version() < oldest:
        raise ValueError(
            f"Cannot export to {format!r} on the {backend} backend with Keras "
            f"{keras.version()}: it needs Keras {oldest[0]}.{oldest[1]} or later "
            f"({before}): pip install -U keras. {ON_TENSORFLOW}."
        )


class CheckedExport:
    """Mixin for `keras.Model` subclasses: `export` runs `check_export`
    before Keras exports. Put it before the Keras base class."""

    def export(self, filepath, format="tf_saved_model", **kwargs):
        """`keras.Model.export`, after `check_export(format)`."""
        check_export(format)
        with _exportable(self):
            return super().export(filepath, format=format, **kwargs)


@contextlib.contextmanager
def _exportable(model):
    """What Keras' export of `model` needs on the current backend, for the
    duration of the block.

    On JAX the layers take Keras' formulas (`use_kernels("plain")`): the
    faster form of the spatial projection on CPUs merges the batch axis
    into another, a symbolic product that jax2onnx cannot reshape to ("reshape
    with symbolic dimensions requires mapping to input axes"). On PyTorch,
    `keras_gmlp.utils._torch_export.torch_exportable`.
    """
    backend = keras.config.backend()
    if backend == "jax":
        with use_kernels("plain"):
            yield
    elif backend == "torch":
        from keras_gmlp.utils._torch_export import torch_exportable

        with torch_exportable(model):
            yield
    else:
        yield
