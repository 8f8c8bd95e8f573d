import keras

from keras_gmlp.layers import gMLPBlock
from keras_gmlp.layers._patch_mlp import gmlp_block_factory
from keras_gmlp.models._patch_mlp_backbone import COMMON_BACKBONE_ARGS_DOC
from keras_gmlp.models._patch_mlp_backbone import FROM_TIMM_LAYOUT_DOC
from keras_gmlp.models._patch_mlp_backbone import PatchMLPImageBackbone
from keras_gmlp.models._patch_mlp_backbone import check_backbone_arguments


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPImageBackbone(PatchMLPImageBackbone):
    __doc__ = f"""The gMLP image backbone of "Pay Attention to MLPs" (Liu et al., 2021).

    Images are cut into `patch_size` patches and embedded (`stem`), run
    through `num_layers` gMLP blocks (pre-norm, channel expansion, spatial
    gating unit over the patch grid, projection, residual) and a final layer
    normalisation. The output is the normalised token grid `(batch, rows,
    columns, hidden_dim)`; `gMLPImageClassifier` pools it into logits. The
    layers, their order and numerics are timm's `MlpMixer` with
    `SpatialGatingBlock`, and the same as `keras_gmlp.applications.gMLPS`
    and its siblings build.

    The spatial weights cover the patch grid of `image_shape`, so the image
    size is fixed when the backbone is built. `from_preset(...,
    image_shape=...)` builds another size and resamples the spatial weights
    of the checkpoint to the new grid.

    Inputs are pixels normalised as the weights expect (timm's mean = std =
    0.5: `[-1, 1]`); `gMLPImageConverter` does this in the preprocessor.
    `feature_extractor()` returns the outputs of chosen blocks, as timm's
    `forward_intermediates`.

    `from_preset` accepts a keras-hub preset directory, a name of
    `gmlp_image_presets` (`"gmlp_s16_224"`, ...), an `hf://timm/<name>`
    {FROM_TIMM_LAYOUT_DOC}

    Args:
        patch_size: int, side of the square patches.
        num_layers: int, number of gMLP blocks.
        hidden_dim: int, token width (d_model).
        intermediate_dim: int, width of each block's gated expansion
            (d_ffn), even for the split gating.
        gating: str, the spatial gating unit's form: `"split"` (the paper's
            design, and timm's) or an ablation of the paper's Table 3,
            `"multiplicative"`, `"additive"` or `"linear"` (see
            `keras_gmlp.layers.SpatialGatingUnit`).
{COMMON_BACKBONE_ARGS_DOC}

    Examples:

    ```python
    # gMLP-S/16 with timm's ImageNet weights, converted on load.
    backbone = keras_gmlp.models.gMLPImageBackbone.from_preset(
        "hf://timm/gmlp_s16_224.ra3_in1k"
    )
    features = backbone(np.zeros((1, 224, 224, 3)))  # (1, 14, 14, 256)

    # A small gMLP for 32x32 images.
    backbone = keras_gmlp.models.gMLPImageBackbone(
        patch_size=4, num_layers=4, hidden_dim=64, intermediate_dim=256,
        image_shape=(32, 32, 3),
    )
    ```
    """

    # LoRA adapts the channel projections of every block, which it names.
    LORA_LAYER_NAMES = gMLPBlock.CHANNEL_PROJECTIONS

    def __init__(
        self,
        patch_size,
        num_layers,
        hidden_dim,
        intermediate_dim,
        image_shape=(224, 224, 3),
        drop_path_rate=0.0,
        data_format=None,
        dtype=None,
        gating="split",
        **kwargs,
    ):
        check_backbone_arguments(
            patch_size,
            num_layers,
            {"hidden_dim": hidden_dim, "intermediate_dim": intermediate_dim},
            image_shape,
            drop_path_rate,
            data_format,
        )
        if intermediate_dim % 2 and gating == "split":
            raise ValueError(
                "`intermediate_dim` must be even: the spatial gating unit "
                "splits it in two halves. Received: "
                f"intermediate_dim={intermediate_dim}"
            )
        super().__init__(
            gmlp_block_factory(hidden_dim, intermediate_dim, gating),
            patch_size=patch_size,
            num_layers=num_layers,
            hidden_dim=hidden_dim,
            image_shape=image_shape,
            drop_path_rate=drop_path_rate,
            data_format=data_format,
            dtype=dtype,
            **kwargs,
        )
        self.intermediate_dim = intermediate_dim
        self.gating = gating

    def get_config(self):
        config = super().get_config()
        config["intermediate_dim"] = self.intermediate_dim
        config["gating"] = self.gating
        return config
