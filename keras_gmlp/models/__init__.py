"""Model families built from keras_gmlp.layers.

The text models (gMLPBackbone, gMLPTokenizer, the masked LM and the text
classifier with their preprocessors) are keras-hub classes, so they are
imported on first use: `import keras_gmlp.models` alone does not bring in
keras-hub or TensorFlow.
"""

import importlib

_TEXT_MODELS = (
    "gMLPBackbone",
    "gMLPTokenizer",
    "gMLPCausalLM",
    "gMLPCausalLMPreprocessor",
    "gMLPMaskedLM",
    "gMLPMaskedLMPreprocessor",
    "gMLPTextClassifier",
    "gMLPTextClassifierPreprocessor",
)


__all__ = list(_TEXT_MODELS)


def __getattr__(name):
    if name in _TEXT_MODELS:
        module = importlib.import_module("keras_gmlp.models.gmlp")
        return getattr(module, name)
    raise AttributeError(f"module 'keras_gmlp.models' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_TEXT_MODELS))
