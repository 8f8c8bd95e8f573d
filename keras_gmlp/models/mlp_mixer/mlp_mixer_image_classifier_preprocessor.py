import keras

from keras_gmlp.models._patch_mlp_image_classifier_preprocessor import (
    IMAGE_CLASSIFIER_PREPROCESSOR_DOCSTRING,
)
from keras_gmlp.models._patch_mlp_image_classifier_preprocessor import (
    PatchMLPImageClassifierPreprocessor,
)
from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_converter import MLPMixerImageConverter


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerImageClassifierPreprocessor(PatchMLPImageClassifierPreprocessor):
    __doc__ = IMAGE_CLASSIFIER_PREPROCESSOR_DOCSTRING.format(
        prefix="MLPMixer", preset="hf://timm/mixer_b16_224.goog_in21k_ft_in1k"
    )

    backbone_cls = MLPMixerBackbone
    image_converter_cls = MLPMixerImageConverter
