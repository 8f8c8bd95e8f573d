"""timm's gMLP (`MlpMixer` with `SpatialGatingBlock` and `GatedMlp`)."""

from keras_gmlp.layers import gMLPBlock
from keras_gmlp.utils.timm.layout import dense_entries
from keras_gmlp.utils.timm.layout import norm_entries
from keras_gmlp.utils.timm.model_args import apply_shared_model_args

block_cls = gMLPBlock

# timm's `mlp_ratio` of the gMLP configurations: d_ffn = 6 * d_model.
DEFAULT_MLP_RATIO = 6


def convert_backbone_config(config, model_args):
    """`gMLPImageBackbone` arguments of a checkpoint.

    Args:
        config: the backbone arguments of its architecture (a preset's).
        model_args: timm's `model_args` from its `config.json`.
    """
    config = apply_shared_model_args(config, model_args)
    ratio = model_args.get("mlp_ratio") or DEFAULT_MLP_RATIO
    config["intermediate_dim"] = int(ratio * config["hidden_dim"])
    return config


def block_entries(index, block):
    """The `(timm key, variable, kind)` entries of gMLP block `index`."""
    if block.tiny_attention is not None:
        raise ValueError(
            "timm has no aMLP (tiny attention) image models. Received: "
            f"a block with attention_dim={block.attention_dim}"
        )
    sgu = block.spatial_gating_unit
    if sgu.num_heads != 1:
        raise ValueError(
            "timm's spatial gating unit has a single head. Received: "
            f"num_heads={sgu.num_heads}"
        )
    prefix = f"blocks.{index}"
    channels = f"{prefix}.mlp_channels"
    return (
        norm_entries(f"{prefix}.norm", block.norm)
        + dense_entries(f"{channels}.fc1", block.expand_dense)
        + norm_entries(f"{channels}.gate.norm", sgu.norm)
        + dense_entries(f"{channels}.gate.proj", sgu, "sgu_kernel", "sgu_bias")
        + dense_entries(f"{channels}.fc2", block.output_dense)
    )
