import keras

from keras_gmlp.models._patch_mlp_image_classifier import IMAGE_CLASSIFIER_DOCSTRING
from keras_gmlp.models._patch_mlp_image_classifier import PatchMLPImageClassifier
from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone
from keras_gmlp.models.gmlp_image.gmlp_image_classifier_preprocessor import (
    gMLPImageClassifierPreprocessor,
)


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageClassifier(PatchMLPImageClassifier):
    __doc__ = IMAGE_CLASSIFIER_DOCSTRING.format(
        article="A",
        family="gMLP",
        prefix="gMLP",
        backbone="gMLPImageBackbone",
        presets_module="gmlp_image_presets",
        mixing_weights="spatial",
        checkpoint_title="timm's gMLP-S/16",
        preset="hf://timm/gmlp_s16_224.ra3_in1k",
        finetuned_dir="gmlp_s16_finetuned",
    )

    backbone_cls = gMLPImageBackbone
    preprocessor_cls = gMLPImageClassifierPreprocessor
