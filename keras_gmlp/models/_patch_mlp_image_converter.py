"""The image converter the gMLP and MLP-Mixer image models share."""

from keras_hub.layers import ImageConverter

from keras_gmlp.models._timm_presets import TimmPresetsMixin

# Each family's converter docstring: `{normalisation}` names whose
# normalisation it applies, `{data_config}` where its defaults come from.
IMAGE_CONVERTER_DOCSTRING = """Resizes images and applies timm's {normalisation} normalisation.

    keras-hub's `ImageConverter` with {data_config} as
    defaults: images are resized to `image_size` and pixels in `[0, 255]`
    are mapped to `[-1, 1]` (mean = std = 0.5 on `[0, 1]`): `x * scale +
    offset` with `scale = 1 / 127.5`, `offset = -1`. Loaded from a timm
    checkpoint, it takes the checkpoint's `pretrained_cfg` (mean, std,
    interpolation) and the backbone's image size. Runs inside `tf.data`.

    Args:
        image_size: `(height, width)` to resize to, or `None` to keep the
            input size. Defaults to `(224, 224)`.
        scale: float or per-channel list, multiplies the pixels.
        offset: float or per-channel list, added after scaling.
        interpolation: resizing interpolation. `"bilinear"` (keras-hub's
            default) resizes alike on every backend; timm evaluated these
            weights with `"bicubic"`, which `from_preset` of a timm
            checkpoint takes from its `pretrained_cfg`, and which differs
            slightly between TensorFlow (tf.data) and torch.
        **kwargs: other `keras_hub.layers.ImageConverter` arguments
            (`crop_to_aspect_ratio`, `antialias`, ...).

    Examples:

    ```python
    converter = keras_gmlp.models.{class_name}(image_size=(224, 224))
    images = converter(np.random.randint(0, 256, (2, 300, 400, 3)))
    # (2, 224, 224, 3) in [-1, 1]
    ```
    """


class PatchMLPImageConverter(TimmPresetsMixin, ImageConverter):
    """keras-hub's `ImageConverter` with the `[-1, 1]` normalisation both
    families' timm weights were trained with as defaults, and timm
    checkpoints in `from_preset`. Subclasses set `backbone_cls`."""

    def __init__(
        self,
        image_size=(224, 224),
        scale=1.0 / 127.5,
        offset=-1.0,
        interpolation="bilinear",
        **kwargs,
    ):
        super().__init__(
            image_size=image_size,
            scale=scale,
            offset=offset,
            interpolation=interpolation,
            **kwargs,
        )
