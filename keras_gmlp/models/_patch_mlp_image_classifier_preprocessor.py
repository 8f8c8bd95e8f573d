"""The image classifier preprocessor the gMLP and MLP-Mixer models share."""

from keras_hub.models import ImageClassifierPreprocessor

from keras_gmlp.models._timm_presets import TimmPresetsMixin

# Each family's preprocessor docstring: `{prefix}` is the family's class
# name prefix (`gMLP`, `MLPMixer`), `{preset}` a timm checkpoint of it.
IMAGE_CLASSIFIER_PREPROCESSOR_DOCSTRING = """Prepares raw images for `{prefix}ImageClassifier`.

    Applies a `{prefix}ImageConverter` (resizing and timm's normalisation) to
    the images; labels and sample weights pass through unchanged. Runs
    inside `tf.data.Dataset.map`, and is applied by the classifier's `fit`,
    `evaluate` and `predict`.

    Args:
        image_converter: a `{prefix}ImageConverter`, or `None` to pass images
            through.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.{prefix}ImageClassifierPreprocessor(
        keras_gmlp.models.{prefix}ImageConverter(image_size=(224, 224))
    )
    images, labels = preprocessor(np.random.randint(0, 256, (2, 256, 256, 3)), [1, 0])

    # From timm's data config of a checkpoint.
    preprocessor = keras_gmlp.models.{prefix}ImageClassifierPreprocessor.from_preset(
        "{preset}"
    )
    dataset = dataset.map(preprocessor)
    ```
    """


class PatchMLPImageClassifierPreprocessor(
    TimmPresetsMixin, ImageClassifierPreprocessor
):
    """keras-hub's `ImageClassifierPreprocessor` with timm checkpoints in
    `from_preset`. Subclasses set `backbone_cls` and `image_converter_cls`."""
