import keras

from keras_gmlp.models._patch_mlp_image_converter import IMAGE_CONVERTER_DOCSTRING
from keras_gmlp.models._patch_mlp_image_converter import PatchMLPImageConverter
from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageConverter(PatchMLPImageConverter):
    __doc__ = IMAGE_CONVERTER_DOCSTRING.format(
        normalisation="gMLP",
        data_config="timm's data config for gMLP",
        class_name="gMLPImageConverter",
    )

    backbone_cls = gMLPImageBackbone
