import keras
from keras_hub.models import ImageClassifierPreprocessor

from keras_gmlp.models._timm_presets import TimmPresetsMixin
from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone
from keras_gmlp.models.gmlp_image.gmlp_image_converter import gMLPImageConverter


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageClassifierPreprocessor(TimmPresetsMixin, ImageClassifierPreprocessor):
    """Prepares raw images for `gMLPImageClassifier`.

    Applies a `gMLPImageConverter` (resizing and timm's normalisation) to
    the images; labels and sample weights pass through unchanged. Runs
    inside `tf.data.Dataset.map`, and is applied by the classifier's `fit`,
    `evaluate` and `predict`.

    Args:
        image_converter: a `gMLPImageConverter`, or `None` to pass images
            through.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.gMLPImageClassifierPreprocessor(
        keras_gmlp.models.gMLPImageConverter(image_size=(224, 224))
    )
    images, labels = preprocessor(np.random.randint(0, 256, (2, 256, 256, 3)), [1, 0])

    # From timm's data config of a checkpoint.
    preprocessor = keras_gmlp.models.gMLPImageClassifierPreprocessor.from_preset(
        "hf://timm/gmlp_s16_224.ra3_in1k"
    )
    dataset = dataset.map(preprocessor)
    ```
    """

    backbone_cls = gMLPImageBackbone
    image_converter_cls = gMLPImageConverter
