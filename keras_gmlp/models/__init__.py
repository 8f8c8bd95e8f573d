"""Model families built from keras_gmlp.layers, as keras-hub classes.

The text models (gMLPBackbone, gMLPTokenizer, the masked LM, the text
classifier and the causal LM with their preprocessors, and the LM metrics)
and the image models (gMLPImageBackbone, MLPMixerBackbone, their
ImageClassifier, preprocessor and ImageConverter) subclass keras-hub, so
importing this package imports keras-hub and, with it, TensorFlow;
`import keras_gmlp` does not. Importing it registers every class below with
Keras under its saved name, so `keras.saving.load_model` and
`from_preset` find them.

keras-hub is the `hub` extra: without it, importing this package raises
one `ModuleNotFoundError` that names it (`pip install "keras-gmlp[hub]"`).
"""

from keras_gmlp._compat import requires_hub_extra
from keras_gmlp.utils import _tensorflow_start

with requires_hub_extra("keras_gmlp.models"):
    from keras_gmlp.models.gmlp import CausalLMPerplexity
    from keras_gmlp.models.gmlp import MaskedLMAccuracy
    from keras_gmlp.models.gmlp import MaskedLMPerplexity
    from keras_gmlp.models.gmlp import gMLPBackbone
    from keras_gmlp.models.gmlp import gMLPCausalLM
    from keras_gmlp.models.gmlp import gMLPCausalLMPreprocessor
    from keras_gmlp.models.gmlp import gMLPMaskedLM
    from keras_gmlp.models.gmlp import gMLPMaskedLMPreprocessor
    from keras_gmlp.models.gmlp import gMLPTextClassifier
    from keras_gmlp.models.gmlp import gMLPTextClassifierPreprocessor
    from keras_gmlp.models.gmlp import gMLPTokenizer
    from keras_gmlp.models.gmlp_image import gMLPImageBackbone
    from keras_gmlp.models.gmlp_image import gMLPImageClassifier
    from keras_gmlp.models.gmlp_image import gMLPImageClassifierPreprocessor
    from keras_gmlp.models.gmlp_image import gMLPImageConverter
    from keras_gmlp.models.mlp_mixer import MLPMixerBackbone
    from keras_gmlp.models.mlp_mixer import MLPMixerImageClassifier
    from keras_gmlp.models.mlp_mixer import MLPMixerImageClassifierPreprocessor
    from keras_gmlp.models.mlp_mixer import MLPMixerImageConverter

__all__ = [
    "CausalLMPerplexity",
    "MaskedLMAccuracy",
    "MaskedLMPerplexity",
    "gMLPBackbone",
    "gMLPCausalLM",
    "gMLPCausalLMPreprocessor",
    "gMLPMaskedLM",
    "gMLPMaskedLMPreprocessor",
    "gMLPTextClassifier",
    "gMLPTextClassifierPreprocessor",
    "gMLPTokenizer",
    "gMLPImageBackbone",
    "gMLPImageClassifier",
    "gMLPImageClassifierPreprocessor",
    "gMLPImageConverter",
    "MLPMixerBackbone",
    "MLPMixerImageClassifier",
    "MLPMixerImageClassifierPreprocessor",
    "MLPMixerImageConverter",
]

# keras-hub has loaded TensorFlow: no `failed call to cuInit` error line on
# a machine without a GPU driver.
_tensorflow_start.initialise_tensorflow_devices_quietly()
