"""ImageNet input and output helpers of the image classifiers."""

from keras_gmlp._compat import requires_hub_extra


def preprocess_input(x, data_format=None):
    """A placeholder method for backward compatibility.

    The gMLP and Mixer builders scale raw `[0, 255]` pixels inside the model
    (`include_preprocessing=True`, the default), as keras.applications'
    ConvNeXt does, so this returns its input unchanged. With
    `include_preprocessing=False`, scale pixels to `[-1, 1]` yourself
    (`x / 127.5 - 1`), timm's normalisation for these weights.

    Args:
        x: a floating point NumPy array or backend tensor of images.
        data_format: optional data format of the image tensor; ignored.

    Returns:
        `x`, unchanged.

    Examples:

    ```python
    images = keras_gmlp.applications.preprocess_input(images)  # no-op
    ```
    """
    return x


def decode_predictions(preds, top=5):
    """Decodes the predictions of an ImageNet-1k classifier.

    Returns what `keras.applications.imagenet_utils.decode_predictions` does,
    without its download: the class list is keras-hub's built-in ImageNet
    table (imported on first call; keras-hub is the `hub` extra), in the
    class order the timm ImageNet weights use.

    Args:
        preds: array of shape `(samples, 1000)`.
        top: int, how many top guesses to return per sample.

    Returns:
        One list per sample of `(class_name, class_description, score)`
        tuples, highest score first.

    Examples:

    ```python
    model = keras_gmlp.applications.gMLPS(weights="imagenet")
    preds = model.predict(images)
    print(keras_gmlp.applications.decode_predictions(preds, top=3)[0])
    ```
    """
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise ValueError(
            f"`top` must be an integer in [1, 1000]. Received: top={top!r}"
        )
    with requires_hub_extra("keras_gmlp.applications.decode_predictions"):
        from keras_hub.utils import decode_imagenet_predictions

    return decode_imagenet_predictions(preds, top=top, include_synset_ids=True)
