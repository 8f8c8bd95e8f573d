"""ImageNet input and output helpers of the image classifiers."""

import functools
import importlib.resources

import keras
import numpy as np

# ImageNet-1k's classes in the order of timm's weights (WordNet ids,
# sorted), one `wordnet_id name` line each: the table keras-hub's
# `decode_imagenet_predictions` uses, shipped here (20 KB) so that decoding
# needs neither keras-hub nor a download.
_CLASS_FILE = "imagenet_classes.txt"


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
    without its download: the class names ship with keras-gmlp
    (`imagenet_classes.txt`, keras-hub's ImageNet table), in the class order
    the timm ImageNet weights use.

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
    preds = keras.ops.convert_to_numpy(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(
            "`preds` must have the shape (samples, 1000). "
            f"Received: preds.shape={preds.shape}"
        )
    classes = _imagenet_classes()
    results = []
    for row in preds:
        best = np.argsort(-row, kind="stable")[:top]
        results.append([(*classes[i], float(row[i])) for i in best])
    return results


@functools.cache
def _imagenet_classes():
    """The 1,000 `(wordnet_id, name)` pairs, in class order."""
    text = importlib.resources.files(__package__).joinpath(_CLASS_FILE).read_text()
    classes = tuple(tuple(line.split(" ")) for line in text.splitlines())
    if len(classes) != 1000 or any(len(pair) != 2 for pair in classes):
        raise ValueError(f"{_CLASS_FILE} must hold 1000 `wordnet_id name` lines")
    return classes
