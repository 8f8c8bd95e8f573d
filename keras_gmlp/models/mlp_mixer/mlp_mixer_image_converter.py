import keras
from keras_hub.layers import ImageConverter

from keras_gmlp.models._timm_presets import TimmPresetsMixin
from keras_gmlp.models.mlp_mixer.mlp_mixer_backbone import MLPMixerBackbone


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerImageConverter(TimmPresetsMixin, ImageConverter):
    """Resizes images and applies timm's Mixer normalisation.

    keras-hub's `ImageConverter` with the data config of Google's Mixer weights in timm as
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
    converter = keras_gmlp.models.MLPMixerImageConverter(image_size=(224, 224))
    images = converter(np.random.randint(0, 256, (2, 300, 400, 3)))
    # (2, 224, 224, 3) in [-1, 1]
    ```
    """

    backbone_cls = MLPMixerBackbone

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
