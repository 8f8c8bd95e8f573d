import keras

from keras_gmlp.models._patch_mlp_image_classifier_preprocessor import (
    IMAGE_CLASSIFIER_PREPROCESSOR_DOCSTRING,
)
from keras_gmlp.models._patch_mlp_image_classifier_preprocessor import (
    PatchMLPImageClassifierPreprocessor,
)
from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone
from keras_gmlp.models.gmlp_image.gmlp_image_converter import gMLPImageConverter


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageClassifierPreprocessor(PatchMLPImageClassifierPreprocessor):
    __doc__ = IMAGE_CLASSIFIER_PREPROCESSOR_DOCSTRING.format(
        prefix="gMLP", preset="hf://timm/gmlp_s16_224.ra3_in1k"
    )

    backbone_cls = gMLPImageBackbone
    image_converter_cls = gMLPImageConverter
