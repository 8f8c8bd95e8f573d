"""keras-gmlp: gMLP, aMLP and MLP-Mixer for Keras 3.

`keras_gmlp.layers` and the image applications import only keras; the text
models (`keras_gmlp.models`) import keras-hub, and with it TensorFlow, on
first use. Importing keras_gmlp registers every class the library saves,
so `keras.saving.load_model` needs nothing else.
"""

import importlib

from keras_gmlp import layers

# Registers the keras-hub model classes with Keras (without importing them).
from keras_gmlp import models
from keras_gmlp.host_memory import keep_freed_host_memory

__version__ = "0.1.0"

_LAZY_SUBMODULES = ("applications", "distribution", "visualization")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"keras_gmlp.{name}")
    raise AttributeError(f"module 'keras_gmlp' has no attribute {name!r}")
