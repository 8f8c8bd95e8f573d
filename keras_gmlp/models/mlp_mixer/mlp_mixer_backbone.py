import keras

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers._patch_mlp import mixer_block_factory
from keras_gmlp.models._patch_mlp_backbone import COMMON_BACKBONE_ARGS_DOC
from keras_gmlp.models._patch_mlp_backbone import FROM_TIMM_LAYOUT_DOC
from keras_gmlp.models._patch_mlp_backbone import PatchMLPImageBackbone
from keras_gmlp.models._patch_mlp_backbone import check_backbone_arguments


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MLPMixerBackbone(PatchMLPImageBackbone):
    __doc__ = f"""The MLP-Mixer image backbone (Tolstikhin et al., 2021).

    Images are cut into `patch_size` patches and embedded (`stem`), run
    through `num_layers` Mixer blocks (a token-mixing MLP across the patch
    grid, then a channel-mixing MLP, each pre-norm with a residual) and a
    final layer normalisation. The output is the normalised token grid
    `(batch, rows, columns, hidden_dim)`; `MLPMixerImageClassifier` pools
    it into logits. The layers, their order and numerics are timm's
    `MlpMixer`, and the same as `keras_gmlp.applications.MixerB16` and its
    siblings build.

    The token-mixing MLP covers the patch grid of `image_shape`, so the
    image size is fixed when the backbone is built. `from_preset(...,
    image_shape=...)` builds another size and resamples the token-mixing
    weights of the checkpoint to the new grid.

    Inputs are pixels normalised as the weights expect (for Google's Mixer
    weights mean = std = 0.5: `[-1, 1]`); `MLPMixerImageConverter` does this
    in the preprocessor. `feature_extractor()` returns the outputs of chosen
    blocks, as timm's `forward_intermediates`.

    `from_preset` accepts a keras-hub preset directory, a name of
    `mlp_mixer_presets` (`"mixer_b16_224"`, ...), an `hf://timm/<name>`
    {FROM_TIMM_LAYOUT_DOC}

    Args:
        patch_size: int, side of the square patches.
        num_layers: int, number of Mixer blocks.
        hidden_dim: int, token width.
        tokens_mlp_dim: int, hidden width of the token-mixing MLP.
        channels_mlp_dim: int, hidden width of the channel-mixing MLP.
{COMMON_BACKBONE_ARGS_DOC}

    Examples:

    ```python
    # Mixer-B/16 with Google's ImageNet-21k + 1k weights, converted on load.
    backbone = keras_gmlp.models.MLPMixerBackbone.from_preset(
        "hf://timm/mixer_b16_224.goog_in21k_ft_in1k"
    )
    features = backbone(np.zeros((1, 224, 224, 3)))  # (1, 14, 14, 768)

    # A small Mixer for 32x32 images.
    backbone = keras_gmlp.models.MLPMixerBackbone(
        patch_size=4, num_layers=4, hidden_dim=64, tokens_mlp_dim=32,
        channels_mlp_dim=256, image_shape=(32, 32, 3),
    )
    ```
    """

    # LoRA adapts the channel-mixing MLPs, which the block names.
    LORA_LAYER_NAMES = MixerBlock.CHANNEL_PROJECTIONS

    def __init__(
        self,
        patch_size,
        num_layers,
        hidden_dim,
        tokens_mlp_dim,
        channels_mlp_dim,
        image_shape=(224, 224, 3),
        drop_path_rate=0.0,
        data_format=None,
        dtype=None,
        **kwargs,
    ):
        check_backbone_arguments(
            patch_size,
            num_layers,
            {
                "hidden_dim": hidden_dim,
                "tokens_mlp_dim": tokens_mlp_dim,
                "channels_mlp_dim": channels_mlp_dim,
            },
            image_shape,
            drop_path_rate,
            data_format,
        )
        super().__init__(
            mixer_block_factory(hidden_dim, tokens_mlp_dim, channels_mlp_dim),
            patch_size=patch_size,
            num_layers=num_layers,
            hidden_dim=hidden_dim,
            image_shape=image_shape,
            drop_path_rate=drop_path_rate,
            data_format=data_format,
            dtype=dtype,
            **kwargs,
        )
        self.tokens_mlp_dim = tokens_mlp_dim
        self.channels_mlp_dim = channels_mlp_dim

    def get_config(self):
        config = super().get_config()
        config["tokens_mlp_dim"] = self.tokens_mlp_dim
        config["channels_mlp_dim"] = self.channels_mlp_dim
        return config
