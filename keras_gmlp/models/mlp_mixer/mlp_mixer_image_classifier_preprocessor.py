import keras
from keras_hub.models import ImageClassifierPreprocessor

from keras_gmlp.models._timm_presets import TimmPresetsMixin
from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone
from keras_gmlp.models.mlp_mixer.mlp_mixer_image_converter import MLPMixerImageConverter


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerImageClassifierPreprocessor(TimmPresetsMixin, ImageClassifierPreprocessor):
    """Prepares raw images for `MLPMixerImageClassifier`.

    Applies a `MLPMixerImageConverter` (resizing and timm's normalisation) to
    the images; labels and sample weights pass through unchanged. Runs
    inside `tf.data.Dataset.map`, and is applied by the classifier's `fit`,
    `evaluate` and `predict`.

    Args:
        image_converter: a `MLPMixerImageConverter`, or `None` to pass images
            through.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.MLPMixerImageClassifierPreprocessor(
        keras_gmlp.models.MLPMixerImageConverter(image_size=(224, 224))
    )
    images, labels = preprocessor(np.random.randint(0, 256, (2, 256, 256, 3)), [1, 0])

    # From timm's data config of a checkpoint.
    preprocessor = keras_gmlp.models.MLPMixerImageClassifierPreprocessor.from_preset(
        "hf://timm/mixer_b16_224.goog_in21k_ft_in1k"
    )
    dataset = dataset.map(preprocessor)
    ```
    """

    backbone_cls = MLPMixerBackbone
    image_converter_cls = MLPMixerImageConverter
