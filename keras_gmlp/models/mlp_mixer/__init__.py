"""MLP-Mixer image models on keras-hub's image classification classes."""

from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_classifier import (
    MLPMixerImageClassifier,
)
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_classifier_preprocessor import (
    MLPMixerImageClassifierPreprocessor,
)
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_converter import MLPMixerImageConverter
from keras_gmlp.models.mlp_mixer.mlp_mixer_presets import backbone_presets
