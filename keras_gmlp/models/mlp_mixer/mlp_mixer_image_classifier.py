import keras

from keras_gmlp.models._patch_mlp_image_classifier import IMAGE_CLASSIFIER_DOCSTRING
from keras_gmlp.models._patch_mlp_image_classifier import PatchMLPImageClassifier
from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_classifier_preprocessor import (
    MLPMixerImageClassifierPreprocessor,
)


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerImageClassifier(PatchMLPImageClassifier):
    __doc__ = IMAGE_CLASSIFIER_DOCSTRING.format(
        article="An",
        family="MLP-Mixer",
        prefix="MLPMixer",
        backbone="MLPMixerBackbone",
        presets_module="mlp_mixer_presets",
        mixing_weights="token-mixing",
        checkpoint_title="Google's Mixer-B/16",
        preset="hf://timm/mixer_b16_224.goog_in21k_ft_in1k",
        finetuned_dir="mixer_b16_finetuned",
    )

    backbone_cls = MLPMixerBackbone
    preprocessor_cls = MLPMixerImageClassifierPreprocessor
