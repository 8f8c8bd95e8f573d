"""gMLP image models on keras-hub's image classification classes."""

from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone
from keras_gmlp.models.gmlp_image.gmlp_image_classifier import gMLPImageClassifier
from keras_gmlp.models.gmlp_image.gmlp_image_classifier_preprocessor import (
    gMLPImageClassifierPreprocessor,
)
from keras_gmlp.models.gmlp_image.gmlp_image_converter import gMLPImageConverter
from keras_gmlp.models.gmlp_image.gmlp_image_presets import backbone_presets
