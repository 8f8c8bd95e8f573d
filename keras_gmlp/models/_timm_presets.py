"""`from_preset` for timm's gMLP and MLP-Mixer checkpoints.

keras-hub reads timm repositories (a `config.json` with `architecture` and
`pretrained_cfg`, and a `model.safetensors`) through a loader that
dispatches on a fixed list of architectures, without gMLP or Mixer, and
with no hook for another package. So the image classes of this library
override `from_preset`: a timm checkpoint of theirs (a local directory in
timm's Hugging Face layout, an `hf://timm/<name>` handle, or a name of the
presets tables) is converted here; everything else (keras-hub preset
directories and handles) goes to keras-hub's `from_preset` unchanged.

Files come from `keras_gmlp.utils.preset_files` (huggingface_hub for
`hf://` handles, in place for local directories). Weights are read with
safetensors' NumPy reader (no torch), converted with
`keras_gmlp.utils.timm` (the conversion the builders use) and resampled
when the image shape gives another patch grid.
"""

import importlib
import json
import os

import numpy as np

from keras_gmlp.layers._patch_mlp import check_data_format
from keras_gmlp.utils.preset_files import is_local_or_hf
from keras_gmlp.utils.preset_files import preset_file
from keras_gmlp.utils.timm import convert_gmlp
from keras_gmlp.utils.timm import convert_mlp_mixer
from keras_gmlp.utils.timm.checkpoint import read_checkpoint
from keras_gmlp.utils.timm.state_dict import load_timm_weights
from keras_gmlp.utils.timm.state_dict import timm_state_dict

# timm architecture prefix: (module, backbone class, presets module, converter).
FAMILIES = {
    "gmlp_": (
        "keras_gmlp.models.gmlp_image",
        "gMLPImageBackbone",
        "keras_gmlp.models.gmlp_image.gmlp_image_presets",
        convert_gmlp,
    ),
    "mixer_": (
        "keras_gmlp.models.mlp_mixer",
        "MLPMixerBackbone",
        "keras_gmlp.models.mlp_mixer.mlp_mixer_presets",
        convert_mlp_mixer,
    ),
}


def _family(architecture):
    """The backbone class, presets table and converter of a timm
    architecture, or three `None`s for another architecture."""
    for prefix, (module, backbone, presets_module, converter) in FAMILIES.items():
        if architecture.startswith(prefix):
            backbone_cls = getattr(importlib.import_module(module), backbone)
            presets = importlib.import_module(presets_module).backbone_presets
            return backbone_cls, presets, converter
    return None, None, None


def all_presets():
    presets = {}
    for prefix in FAMILIES:
        presets.update(_family(prefix)[1])
    return presets


def backbone_config(architecture, model_args, presets, converter):
    """The backbone arguments of a timm architecture and its `model_args`."""
    if architecture not in presets:
        raise ValueError(
            f"Unknown timm architecture {architecture!r}; the supported ones "
            f"are {', '.join(sorted(presets))}. Received: "
            f"architecture={architecture!r}"
        )
    return converter.convert_backbone_config(
        presets[architecture]["config"], model_args
    )


class TimmCheckpoint:
    """A timm gMLP or Mixer checkpoint: its config, converted on demand.

    Args:
        preset: the directory or handle the files come from; `None` for a
            presets-table entry without public weights.
        config: timm's `config.json` contents.
        family: the family's `(backbone class, presets table, converter)`.
        revision: the commit of an `hf://` repository, `None` for its
            default branch.
    """

    def __init__(self, preset, config, family, revision=None):
        self.preset = preset
        self.revision = revision
        self.config = config
        self.backbone_cls, presets, converter = family
        self.architecture = config["architecture"]
        model_args = dict(config.get("model_args") or {})
        self.backbone_kwargs = backbone_config(
            self.architecture, model_args, presets, converter
        )
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
            self.image_shape[0] // patch_size,
            self.image_shape[1] // patch_size,
        )
        self.image_size = self.image_shape[:2]
        self.weights_path = None
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
            self.weights_path = preset_file(
                self.preset, "model.safetensors", self.revision
            )
            self._state = read_checkpoint(self.weights_path)
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
        if (
            "image_shape" not in kwargs
            and check_data_format(kwargs.get("data_format")) == "channels_first"
        ):
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
            try:
                load_timm_weights(backbone, state, checkpoint_grid=self.checkpoint_grid)
            except ValueError as error:
                raise ValueError(f"{self.weights_path}: {error}") from None
        return backbone

    def load_task(self, cls, load_weights, load_task_weights, **kwargs):
        if "backbone" not in kwargs:
            backbone_kwargs = {
                key: kwargs.pop(key)
                for key in ("dtype", "image_shape")
                if key in kwargs
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
        if kernel.shape != tuple(dense.kernel.shape) or bias.shape != tuple(
            dense.bias.shape
        ):
            raise ValueError(
                f"{self.weights_path}: the checkpoint's head (head.weight "
                f"{kernel.T.shape}, head.bias {bias.shape}) does not fit {self.num_classes} "
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
            kwargs["image_converter"] = self.load_image_converter(
                cls.image_converter_cls
            )
        return cls(**kwargs)


def read_json(path):
    """The contents of the JSON file `path`, a dict; a malformed file is
    refused in one line naming it, with the line and column."""
    try:
        with open(path, encoding="utf-8") as file:
            contents = json.load(file)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}."
        ) from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: {error.reason}.") from None
    if not isinstance(contents, dict):
        raise ValueError(
            f"{path} must hold a JSON object; it holds a {type(contents).__name__}."
        )
    return contents


# timm config.json keys this module reads, and the JSON types they take.
_TIMM_CONFIG_TYPES = {
    "architecture": (str, "a string"),
    "model_args": (dict, "an object"),
    "pretrained_cfg": (dict, "an object"),
    "num_classes": (int, "an integer"),
}


def _check_timm_config(config, path):
    for key, (kind, description) in _TIMM_CONFIG_TYPES.items():
        value = config.get(key)
        if value is not None and (
            not isinstance(value, kind) or isinstance(value, bool)
        ):
            raise ValueError(
                f"{path}: `{key}` must be {description}. Received: {key}={value!r}"
            )


def timm_checkpoint(preset):
    """A `TimmCheckpoint` when `preset` is one of this library's timm
    checkpoints or preset names, else `None` (a keras-hub preset)."""
    if not isinstance(preset, str):
        return None
    presets = all_presets()
    name, revision = preset, None
    if preset in presets:
        entry = presets[preset]
        if entry["timm_handle"] is None:
            config = {"architecture": preset, "pretrained_cfg": {"num_classes": 1000}}
            return TimmCheckpoint(None, config, _family(preset))
        preset, revision = entry["timm_handle"], entry["timm_revision"]
    if not is_local_or_hf(preset):
        return None
    if os.path.isdir(preset) and not os.path.isfile(
        os.path.join(preset, "config.json")
    ):
        return None  # keras-hub reports what is missing.
    # Hub errors propagate: keras-hub would retry the download and then
    # call a known preset name unknown.
    try:
        config_path = preset_file(preset, "config.json", revision)
    except OSError as error:
        if preset == name:
            raise
        # Named the way the user named it: a known name is never unknown.
        raise type(error)(f"Preset {name!r}: {error}") from None
    config = read_json(config_path)
    if "registered_name" in config or "architecture" not in config:
        return None
    _check_timm_config(config, config_path)
    architecture = config["architecture"]
    family = _family(architecture)
    if family[0] is None:
        raise ValueError(
            f"{preset!r} holds a timm {architecture!r} model; keras_gmlp's "
            "image classes load timm's gMLP (`gmlp_*`) and MLP-Mixer "
            f"(`mixer_*`) checkpoints. Received: preset={preset!r}"
        )
    return TimmCheckpoint(preset, config, family, revision)


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
    """The backbone `image_shape` a keras-hub preset was saved with, or
    `None` when it cannot be read here (then keras-hub loads as it is)."""
    if not is_local_or_hf(preset):
        return None
    try:
        with open(preset_file(preset, "config.json"), encoding="utf-8") as file:
            shape = json.load(file).get("config", {}).get("image_shape")
    except (FileNotFoundError, ValueError, OSError):
        return None
    return None if shape is None else tuple(shape)


def _resample(saved, image_shape):
    """`saved` (a backbone or task) rebuilt for `image_shape`, its spatial
    weights resampled as for timm checkpoints."""
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
