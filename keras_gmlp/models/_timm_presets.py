"""`from_preset` for timm's gMLP and MLP-Mixer checkpoints.

keras-hub reads timm repositories (a `config.json` with `architecture` and
`pretrained_cfg`, and a `model.safetensors`) through a loader that
dispatches on a fixed list of architectures, without gMLP or Mixer, and
with no hook for another package. So the image classes of this library
override `from_preset`: a timm checkpoint of theirs (a local directory in
timm's Hugging Face layout, an `hf://timm/<name>` handle, or a name of the
presets tables) is converted here; everything else (keras-hub preset
directories and handles) goes to keras-hub's `from_preset` unchanged.

Files are fetched with keras-hub's `get_file`, which downloads `hf://`
handles with `huggingface_hub` into its cache and reads local directories
in place. Weights are read with safetensors' NumPy reader (no torch),
converted with `keras_gmlp.applications.weights` (the conversion the
builders use) and resampled when the image shape gives another patch grid.
"""

import importlib
import json
import os

import keras
import numpy as np
from keras_hub.src.utils.preset_utils import get_file

from keras_gmlp.applications.weights import load_timm_weights
from keras_gmlp.applications.weights import read_checkpoint
from keras_gmlp.layers._patch_mlp import check_data_format

# timm architecture prefix: (module, backbone class, presets module, table).
FAMILIES = {
    "gmlp_": (
        "keras_gmlp.models.gmlp_image",
        "gMLPImageBackbone",
        "keras_gmlp.models.gmlp_image.gmlp_image_presets",
        "backbone_presets",
    ),
    "mixer_": (
        "keras_gmlp.models.mlp_mixer",
        "MLPMixerBackbone",
        "keras_gmlp.models.mlp_mixer.mlp_mixer_presets",
        "backbone_presets",
    ),
}

# timm `model_args` this conversion understands (timm's MlpMixer arguments).
SUPPORTED_MODEL_ARGS = {
    "patch_size", "num_blocks", "embed_dim", "mlp_ratio", "img_size",
    "in_chans", "num_classes", "drop_path_rate", "global_pool",
}


def _family(architecture):
    for prefix, (module, backbone, presets_module, table) in FAMILIES.items():
        if architecture.startswith(prefix):
            backbone_cls = getattr(importlib.import_module(module), backbone)
            presets = getattr(importlib.import_module(presets_module), table)
            return backbone_cls, presets
    return None, None


def all_presets():
    presets = {}
    for prefix in FAMILIES:
        presets.update(_family(prefix)[1])
    return presets


def _pair(value, name):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return tuple(int(v) for v in value)
    raise ValueError(f"timm's `{name}` must be an int or a pair. Received: {name}={value!r}")


def backbone_config(architecture, model_args, presets):
    """The backbone arguments of a timm architecture and its `model_args`."""
    if architecture not in presets:
        raise ValueError(
            f"Unknown timm architecture {architecture!r}; the supported ones "
            f"are {', '.join(sorted(presets))}. Received: "
            f"architecture={architecture!r}"
        )
    config = dict(presets[architecture]["config"])
    unknown = sorted(set(model_args) - SUPPORTED_MODEL_ARGS)
    if unknown or model_args.get("global_pool", "avg") != "avg":
        raise ValueError(
            "The checkpoint's `model_args` change the architecture in ways "
            f"this conversion does not support: {unknown or 'global_pool'}. "
            f"Supported: {sorted(SUPPORTED_MODEL_ARGS)} (global_pool='avg'). "
            f"Received: model_args={model_args}"
        )
    hidden_dim = model_args.get("embed_dim", config["hidden_dim"])
    config["hidden_dim"] = hidden_dim
    if "patch_size" in model_args:
        config["patch_size"] = model_args["patch_size"]
    if "num_blocks" in model_args:
        config["num_layers"] = model_args["num_blocks"]
    if "drop_path_rate" in model_args:
        config["drop_path_rate"] = float(model_args["drop_path_rate"])
    height, width, channels = config["image_shape"]
    if "img_size" in model_args:
        height, width = _pair(model_args["img_size"], "img_size")
    channels = model_args.get("in_chans", channels)
    config["image_shape"] = (height, width, channels)
    ratio = model_args.get("mlp_ratio")
    if "intermediate_dim" in config:  # gMLP: GatedMlp's hidden width.
        config["intermediate_dim"] = int((ratio or 6) * hidden_dim)
    else:  # Mixer: (token MLP, channel MLP) ratios.
        tokens, channels_ratio = ratio or (0.5, 4.0)
        config["tokens_mlp_dim"] = int(tokens * hidden_dim)
        config["channels_mlp_dim"] = int(channels_ratio * hidden_dim)
    return config


class TimmCheckpoint:
    """A timm gMLP or Mixer checkpoint: its config, converted on demand.

    Args:
        preset: the directory or handle the files come from; `None` for a
            presets-table entry without public weights.
        config: timm's `config.json` contents.
        presets: the family's presets table.
        backbone_cls: the family's backbone class.
    """

    def __init__(self, preset, config, presets, backbone_cls):
        self.preset = preset
        self.config = config
        self.backbone_cls = backbone_cls
        self.architecture = config["architecture"]
        model_args = dict(config.get("model_args") or {})
        self.backbone_kwargs = backbone_config(self.architecture, model_args, presets)
        pretrained_cfg = config.get("pretrained_cfg") or {}
        self.pretrained_cfg = pretrained_cfg
        self.num_classes = model_args.get(
            "num_classes",
            config.get("num_classes", pretrained_cfg.get("num_classes", 1000)),
        )
        self.image_shape = self.backbone_kwargs["image_shape"]
        # The grid the checkpoint was trained on, which its token counts
        # alone cannot tell for non-square images.
        patch_size = self.backbone_kwargs["patch_size"]
        self.checkpoint_grid = (
            self.image_shape[0] // patch_size, self.image_shape[1] // patch_size
        )
        self.image_size = self.image_shape[:2]
        self._state = None

    def state(self):
        """timm's state dict as NumPy arrays (read once)."""
        if self.preset is None:
            raise ValueError(
                f"There are no public weights for {self.architecture!r}. Pass "
                "`load_weights=False` for a randomly initialised model, or a "
                "timm checkpoint directory or `hf://timm/...` handle."
            )
        if self._state is None:
            self._state = read_checkpoint(get_file(self.preset, "model.safetensors"))
        return self._state

    def check_family(self, cls):
        """Raises unless backbones of class `cls` can hold this checkpoint."""
        if not issubclass(self.backbone_cls, cls):
            raise ValueError(
                f"{self.preset or self.architecture!r} holds a timm "
                f"{self.architecture!r}, a {self.backbone_cls.__name__}; call "
                f"`from_preset` on that family's classes, not `{cls.__name__}`."
            )

    def load_backbone(self, cls, load_weights, **kwargs):
        self.check_family(cls)
        if "image_shape" not in kwargs and check_data_format(
            kwargs.get("data_format")
        ) == "channels_first":
            # The checkpoint's shape is channels-last; keras-hub's
            # `image_shape` follows the data format.
            height, width, channels = self.image_shape
            kwargs["image_shape"] = (channels, height, width)
        kwargs = {**self.backbone_kwargs, **kwargs}
        state = self.state() if load_weights else None
        backbone = self.backbone_cls(**kwargs)
        # Remembered so the converter resizes to the size the backbone takes.
        rows, columns = backbone.grid_shape
        self.image_size = (rows * backbone.patch_size, columns * backbone.patch_size)
        if load_weights:
            # Converts, checks and (for another image shape) resamples every
            # tensor before assigning any; the head's tensors are skipped.
            load_timm_weights(backbone, state, checkpoint_grid=self.checkpoint_grid)
        return backbone

    def load_task(self, cls, load_weights, load_task_weights, **kwargs):
        if "backbone" not in kwargs:
            backbone_kwargs = {
                key: kwargs.pop(key) for key in ("dtype", "image_shape") if key in kwargs
            }
            kwargs["backbone"] = self.load_backbone(
                cls.backbone_cls, load_weights, **backbone_kwargs
            )
        if "preprocessor" not in kwargs and cls.preprocessor_cls:
            kwargs["preprocessor"] = self.load_preprocessor(cls.preprocessor_cls)
        if load_task_weights:
            kwargs["num_classes"] = self.num_classes
        task = cls(**kwargs)
        if load_task_weights and load_weights:
            self._load_head(task)
        return task

    def _load_head(self, task):
        state = self.state()
        dense = task.output_dense
        kernel = np.asarray(state.get("head.weight", np.zeros((0,))), "float32").T
        bias = np.asarray(state.get("head.bias", np.zeros((0,))), "float32")
        if kernel.shape != tuple(dense.kernel.shape) or bias.shape != tuple(dense.bias.shape):
            raise ValueError(
                f"The checkpoint's head (head.weight {kernel.T.shape}, "
                f"head.bias {bias.shape}) does not fit {self.num_classes} "
                f"classes of width {task.backbone.hidden_dim}; no head weights "
                "were loaded. Pass `num_classes=` to train a new head."
            )
        dense.kernel.assign(kernel)
        dense.bias.assign(bias)

    def load_image_converter(self, cls, **kwargs):
        mean = self.pretrained_cfg.get("mean", (0.5, 0.5, 0.5))
        std = self.pretrained_cfg.get("std", (0.5, 0.5, 0.5))
        interpolation = self.pretrained_cfg.get("interpolation", "bicubic")
        if interpolation not in ("bilinear", "nearest", "bicubic"):
            interpolation = "bilinear"
        defaults = dict(
            image_size=tuple(self.image_size),
            scale=[1.0 / 255.0 / s for s in std],
            offset=[-m / s for m, s in zip(mean, std)],
            interpolation=interpolation,
        )
        return cls(**{**defaults, **kwargs})

    def load_preprocessor(self, cls, **kwargs):
        if "image_converter" not in kwargs and cls.image_converter_cls:
            kwargs["image_converter"] = self.load_image_converter(cls.image_converter_cls)
        return cls(**kwargs)


def timm_checkpoint(preset):
    """A `TimmCheckpoint` when `preset` is one of this library's timm
    checkpoints or preset names, else `None` (a keras-hub preset)."""
    if not isinstance(preset, str):
        return None
    presets = all_presets()
    if preset in presets:
        entry = presets[preset]
        backbone_cls, table = _family(preset)
        source = entry.get("timm_handle")
        if source is None:
            config = {"architecture": preset, "pretrained_cfg": {"num_classes": 1000}}
            return TimmCheckpoint(None, config, table, backbone_cls)
        preset = source
    if not (preset.startswith("hf://") or os.path.isdir(preset)):
        return None
    try:
        config_path = get_file(preset, "config.json")
    except FileNotFoundError:
        return None  # keras-hub reports what is missing.
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    if "registered_name" in config or "architecture" not in config:
        return None
    architecture = config["architecture"]
    backbone_cls, table = _family(architecture)
    if backbone_cls is None:
        raise ValueError(
            f"{preset!r} holds a timm {architecture!r} model; keras_gmlp's "
            "image classes load timm's gMLP (`gmlp_*`) and MLP-Mixer "
            f"(`mixer_*`) checkpoints. Received: preset={preset!r}"
        )
    return TimmCheckpoint(preset, config, table, backbone_cls)


class TimmPresetsMixin:
    """Adds timm checkpoints to `from_preset` of a Backbone, Task,
    Preprocessor or ImageConverter subclass; keras-hub presets pass through."""

    @classmethod
    def from_preset(cls, preset, **kwargs):
        from keras_hub.models import Backbone
        from keras_hub.models import Preprocessor
        from keras_hub.models import Task

        checkpoint = timm_checkpoint(preset)
        if checkpoint is None:
            image_shape = kwargs.get("image_shape")
            if (
                image_shape is not None
                and issubclass(cls, (Backbone, Task))
                and kwargs.get("load_weights", True)
                and _saved_image_shape(preset) not in (None, tuple(image_shape))
            ):
                # Load at the saved size, then move the weights to the new
                # patch grid (keras-hub would fail on the spatial shapes).
                saved = super().from_preset(
                    preset, **{k: v for k, v in kwargs.items() if k != "image_shape"}
                )
                return _resample(saved, image_shape)
            return super().from_preset(preset, **kwargs)
        if issubclass(cls, Backbone):
            load_weights = kwargs.pop("load_weights", True)
            return checkpoint.load_backbone(cls, load_weights, **kwargs)
        if issubclass(cls, Task):
            load_weights = kwargs.pop("load_weights", True)
            checkpoint.check_family(cls.backbone_cls)
            # As keras-hub: a given `num_classes` means a new head.
            load_task_weights = "num_classes" not in kwargs
            return checkpoint.load_task(cls, load_weights, load_task_weights, **kwargs)
        if issubclass(cls, Preprocessor):
            kwargs.pop("config_file", None)
            return checkpoint.load_preprocessor(cls, **kwargs)
        return checkpoint.load_image_converter(cls, **kwargs)


def _saved_image_shape(preset):
    """The backbone `image_shape` a keras-hub preset was saved with."""
    try:
        with open(get_file(preset, "config.json"), encoding="utf-8") as file:
            shape = json.load(file).get("config", {}).get("image_shape")
    except (FileNotFoundError, ValueError, OSError):
        return None
    return None if shape is None else tuple(shape)


def _resample(saved, image_shape):
    """`saved` (a backbone or task) rebuilt for `image_shape`, its spatial
    weights resampled as for timm checkpoints."""
    from keras_gmlp.applications.weights import timm_state_dict

    from keras_hub.models import Backbone

    backbone = saved if isinstance(saved, Backbone) else saved.backbone
    config = dict(backbone.get_config(), image_shape=tuple(image_shape))
    resized = type(backbone).from_config(config)
    load_timm_weights(
        resized, timm_state_dict(backbone), checkpoint_grid=backbone.grid_shape
    )
    if saved is backbone:
        return resized
    config = saved.get_config()
    config.update(backbone=resized, preprocessor=saved.preprocessor)
    task = type(saved).from_config(config)
    task.output_dense.set_weights(saved.output_dense.get_weights())
    converter = getattr(saved.preprocessor, "image_converter", None)
    if converter is not None:
        rows, columns = resized.grid_shape
        converter.image_size = (rows * resized.patch_size, columns * resized.patch_size)
    return task
