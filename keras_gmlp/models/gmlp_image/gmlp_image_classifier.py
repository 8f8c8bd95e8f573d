import keras

from keras_gmlp.models._patch_mlp_image_classifier import PatchMLPImageClassifier
from keras_gmlp.models.gmlp_image.gmlp_image_backbone import gMLPImageBackbone
from keras_gmlp.models.gmlp_image.gmlp_image_classifier_preprocessor import (
    gMLPImageClassifierPreprocessor,
)


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageClassifier(PatchMLPImageClassifier):
    """A gMLP image backbone with timm's classification head.

    keras-hub's `ImageClassifier`: the backbone's normalised token grid is
    averaged over the tokens (timm's `global_pool="avg"`) and a dense layer
    gives `num_classes` logits. With a preprocessor, `fit`, `evaluate` and
    `predict` take raw images (`[0, 255]`, any size) and labels, also as a
    `tf.data.Dataset`. `compile()` defaults to sparse categorical
    cross-entropy, Adam and accuracy.

    `from_preset` loads keras-hub presets, names of `gmlp_image_presets`,
    `hf://timm/<name>` handles and local directories in timm's Hugging Face
    layout (converted without torch, with timm's class count and data
    config). Passing `num_classes` starts a new head; `image_shape`
    resamples the spatial weights to another image size.

    Args:
        backbone: a `gMLPImageBackbone`.
        num_classes: int, the number of classes.
        preprocessor: a `gMLPImageClassifierPreprocessor` or `None`.
        pooling: `"avg"` (timm's head) or `"max"`.
        activation: activation of the outputs; `None` (default) gives
            logits, `"softmax"` probabilities.
        dropout: float, dropout before the dense layer.
        head_dtype: dtype policy of the head; defaults to the backbone's.

    Examples:

    ```python
    # timm's gMLP-S/16, its ImageNet logits, in Keras.
    classifier = keras_gmlp.models.gMLPImageClassifier.from_preset(
        "hf://timm/gmlp_s16_224.ra3_in1k"
    )
    logits = classifier.predict(np.random.randint(0, 256, (1, 256, 256, 3)))

    # Fine-tune on 10 classes at 256x256 (spatial weights resampled).
    classifier = keras_gmlp.models.gMLPImageClassifier.from_preset(
        "hf://timm/gmlp_s16_224.ra3_in1k", num_classes=10,
        image_shape=(256, 256, 3),
    )
    classifier.fit(images_and_labels_dataset, epochs=3)
    classifier.save_to_preset("./gmlp_s16_finetuned")
    ```
    """

    backbone_cls = gMLPImageBackbone
    preprocessor_cls = gMLPImageClassifierPreprocessor
