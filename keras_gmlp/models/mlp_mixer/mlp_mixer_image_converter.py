import keras

from keras_gmlp.models._patch_mlp_image_converter import IMAGE_CONVERTER_DOCSTRING
from keras_gmlp.models._patch_mlp_image_converter import PatchMLPImageConverter
from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerImageConverter(PatchMLPImageConverter):
    __doc__ = IMAGE_CONVERTER_DOCSTRING.format(
        normalisation="Mixer",
        data_config="the data config of Google's Mixer weights in timm",
        class_name="MLPMixerImageConverter",
    )

    backbone_cls = MLPMixerBackbone
