"""keras.applications-style builders.

The image classifiers import only keras. The masked-language-model encoders
(gMLPBase, gMLPLarge, aMLPBase, aMLPLarge) are built on keras-hub, so they
are imported on first use and `import keras_gmlp.applications` stays light.
"""

import importlib

_TEXT_BUILDERS = ("gMLPBase", "gMLPLarge", "aMLPBase", "aMLPLarge")


def __getattr__(name):
    if name in _TEXT_BUILDERS:
        module = importlib.import_module("keras_gmlp.applications.text_encoders")
        return getattr(module, name)
    raise AttributeError(
        f"module 'keras_gmlp.applications' has no attribute {name!r}"
    )
