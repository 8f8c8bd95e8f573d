"""timm's MLP-Mixer (`MlpMixer` with `MixerBlock`)."""

from keras_gmlp.layers import MixerBlock
from keras_gmlp.utils.timm.layout import dense_entries
from keras_gmlp.utils.timm.layout import norm_entries
from keras_gmlp.utils.timm.model_args import apply_shared_model_args

block_cls = MixerBlock

# timm's `mlp_ratio` of the Mixer configurations: (token MLP, channel MLP).
DEFAULT_MLP_RATIO = (0.5, 4.0)


def convert_backbone_config(config, model_args):
    """`MLPMixerBackbone` arguments of a checkpoint.

    Args:
        config: the backbone arguments of its architecture (a preset's).
        model_args: timm's `model_args` from its `config.json`.
    """
    config = apply_shared_model_args(config, model_args)
    tokens_ratio, channels_ratio = model_args.get("mlp_ratio") or DEFAULT_MLP_RATIO
    config["tokens_mlp_dim"] = int(tokens_ratio * config["hidden_dim"])
    config["channels_mlp_dim"] = int(channels_ratio * config["hidden_dim"])
    return config


def block_entries(index, block):
    """The `(timm key, variable, kind)` entries of Mixer block `index`."""
    prefix = f"blocks.{index}"
    return (
        norm_entries(f"{prefix}.norm1", block.token_norm)
        + dense_entries(
            f"{prefix}.mlp_tokens.fc1", block.token_expand_dense, "token_in_kernel"
        )
        + dense_entries(
            f"{prefix}.mlp_tokens.fc2",
            block.token_output_dense,
            "token_out_kernel",
            "token_out_bias",
        )
        + norm_entries(f"{prefix}.norm2", block.channel_norm)
        + dense_entries(f"{prefix}.mlp_channels.fc1", block.channel_expand_dense)
        + dense_entries(f"{prefix}.mlp_channels.fc2", block.channel_output_dense)
    )
