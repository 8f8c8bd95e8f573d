"""timm's `model_args` (from a checkpoint's `config.json`) as backbone
arguments: what gMLP and MLP-Mixer share; each `convert_<family>` adds the
widths of its blocks."""

# timm's MlpMixer arguments this conversion understands.
SUPPORTED_MODEL_ARGS = {
    "patch_size",
    "num_blocks",
    "embed_dim",
    "mlp_ratio",
    "img_size",
    "in_chans",
    "num_classes",
    "drop_path_rate",
    "global_pool",
}


def _pair(value, name):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return tuple(int(v) for v in value)
    raise ValueError(
        f"timm's `{name}` must be an int or a pair. Received: {name}={value!r}"
    )


def apply_shared_model_args(config, model_args):
    """`config` (a backbone config) with the shared `model_args` applied.

    Args:
        config: dict of backbone arguments of the named architecture.
        model_args: dict, timm's `model_args`.

    Returns:
        A new dict.
    """
    unknown = sorted(set(model_args) - SUPPORTED_MODEL_ARGS)
    if unknown or model_args.get("global_pool", "avg") != "avg":
        raise ValueError(
            "The checkpoint's `model_args` change the architecture in ways "
            f"this conversion does not support: {unknown or 'global_pool'}. "
            f"Supported: {sorted(SUPPORTED_MODEL_ARGS)} (global_pool='avg'). "
            f"Received: model_args={model_args}"
        )
    config = dict(config)
    config["hidden_dim"] = model_args.get("embed_dim", config["hidden_dim"])
    if "patch_size" in model_args:
        config["patch_size"] = model_args["patch_size"]
    if "num_blocks" in model_args:
        config["num_layers"] = model_args["num_blocks"]
    if "drop_path_rate" in model_args:
        # timm's MlpMixer gives every block this rate (no linear schedule).
        rate = float(model_args["drop_path_rate"])
        config["drop_path_rate"] = [rate] * config["num_layers"]
    height, width, channels = config["image_shape"]
    if "img_size" in model_args:
        height, width = _pair(model_args["img_size"], "img_size")
    channels = model_args.get("in_chans", channels)
    config["image_shape"] = (height, width, channels)
    return config
