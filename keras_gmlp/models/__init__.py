"""Model families built from keras_gmlp.layers.

The text models (gMLPBackbone, gMLPTokenizer, the masked LM and the text
classifier with their preprocessors) and the image models (gMLPImageBackbone,
MLPMixerBackbone, their ImageClassifier, preprocessor and ImageConverter)
are keras-hub classes, so they are imported on first use: `import keras_gmlp.models` alone does not bring in
keras-hub or TensorFlow.

Importing this package (which `import keras_gmlp` does) registers every
keras-hub class below with Keras under its saved name, so
`keras.saving.load_model` finds them without any other import; the class's
module is imported when a saved model first needs it. A new model family
adds its module and class names to `LAZY_CLASSES`.
"""

import importlib

from keras_gmlp.models._lazy_registration import register_lazily

_TEXT_MODELS = (
    "gMLPBackbone",
    "gMLPTokenizer",
    "gMLPCausalLM",
    "gMLPCausalLMPreprocessor",
    "gMLPMaskedLM",
    "gMLPMaskedLMPreprocessor",
    "gMLPTextClassifier",
    "gMLPTextClassifierPreprocessor",
    "MaskedLMAccuracy",
    "MaskedLMPerplexity",
    "CausalLMPerplexity",
)

_GMLP_IMAGE_MODELS = (
    "gMLPImageBackbone",
    "gMLPImageClassifier",
    "gMLPImageClassifierPreprocessor",
    "gMLPImageConverter",
)
_MLP_MIXER_MODELS = (
    "MLPMixerBackbone",
    "MLPMixerImageClassifier",
    "MLPMixerImageClassifierPreprocessor",
    "MLPMixerImageConverter",
)

# {module: class names}: the public classes of each keras-hub model family,
# loaded on first use and registered with Keras right away.
LAZY_CLASSES = {
    "keras_gmlp.models.gmlp": _TEXT_MODELS,
    "keras_gmlp.models.gmlp_image": _GMLP_IMAGE_MODELS,
    "keras_gmlp.models.mlp_mixer": _MLP_MIXER_MODELS,
}

for _module, _names in LAZY_CLASSES.items():
    register_lazily(_module, _names)

_MODULE_OF = {
    name: module for module, names in LAZY_CLASSES.items() for name in names
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module 'keras_gmlp.models' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_MODULE_OF))
