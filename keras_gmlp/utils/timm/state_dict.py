"""Loading timm state dicts into the image models and exporting them back.

The models are those `keras_gmlp.layers._patch_mlp.patch_mlp` builds (the
keras.applications builders and the keras-hub image backbones): a
`PatchEmbedding` named `stem`, gMLP or Mixer blocks, a `LayerNormalization`
named `norm` and, with a head, a `Dense` named `predictions`. timm names
the same tensors `stem.proj.*`, `blocks.{i}.*`, `norm.*` and `head.*`.
Loading converts every tensor to the Keras layout, checks the whole
checkpoint against the model and assigns only when everything matches, so a
bad checkpoint never half-loads. Token-indexed weights are resampled when
the model's patch grid differs from the checkpoint's.
"""

import os

import keras
import numpy as np

from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.utils.timm import convert_gmlp
from keras_gmlp.utils.timm import convert_mlp_mixer
from keras_gmlp.utils.timm.checkpoint import read_checkpoint
from keras_gmlp.utils.timm.layout import KINDS
from keras_gmlp.utils.timm.layout import dense_entries
from keras_gmlp.utils.timm.layout import norm_entries
from keras_gmlp.utils.timm.resampling import infer_grid
from keras_gmlp.utils.timm.resampling import resample_token_axis

FAMILY_CONVERTERS = (convert_gmlp, convert_mlp_mixer)


def _block_entries(index, block):
    for converter in FAMILY_CONVERTERS:
        if isinstance(block, converter.block_cls):
            return converter.block_entries(index, block)
    raise ValueError(f"No timm conversion for the block {block.name!r}.")


def _is_block(layer):
    return isinstance(
        layer, tuple(converter.block_cls for converter in FAMILY_CONVERTERS)
    )


def model_entries(model):
    """The model's patch grid and its `(timm key, variable, kind)` list."""
    layer_names = {layer.name for layer in model.layers}
    if not {"stem", "norm"} <= layer_names or not isinstance(
        model.get_layer("stem"), PatchEmbedding
    ):
        raise ValueError(
            "Expected an image classifier from keras_gmlp.applications (a "
            "PatchEmbedding named 'stem' and a final LayerNormalization named "
            f"'norm'). Received: model={model.name!r}"
        )
    stem = model.get_layer("stem")
    grid = stem.grid_shape(stem.input.shape)
    blocks = [layer for layer in model.layers if _is_block(layer)]
    entries = [
        ("stem.proj.weight", stem.projection.kernel, "conv"),
        ("stem.proj.bias", stem.projection.bias, "vector"),
    ]
    for index, block in enumerate(blocks):
        entries += _block_entries(index, block)
    entries += norm_entries("norm", model.get_layer("norm"))
    if "predictions" in layer_names:
        entries += dense_entries("head", model.get_layer("predictions"))
    return grid, entries


def _format_problems(title, items, limit=20):
    shown = "\n".join(f"  {item}" for item in items[:limit])
    more = f"\n  ... and {len(items) - limit} more" if len(items) > limit else ""
    return f"{title} ({len(items)}):\n{shown}{more}"


def load_timm_weights(model, checkpoint, checkpoint_grid=None):
    """Loads a timm gMLP or MLP-Mixer checkpoint into an image classifier.

    Every tensor is converted to the Keras layout and checked before any is
    assigned: missing or unexpected keys and mismatched shapes raise one
    error that lists them all, and the model keeps its weights. A model
    without a classification head ignores `head.*`. When the model's patch
    grid differs from the checkpoint's, the token-indexed weights (the
    SGU's spatial kernel and bias, the Mixer token MLP) are resampled
    bilinearly over the 2-D grid.

    Args:
        model: a model from `keras_gmlp.applications` (gMLP or Mixer), or
            a `gMLPImageBackbone` / `MLPMixerBackbone`.
        checkpoint: path of a `.safetensors`, `.pth`, `.pt` or `.bin` file,
            or a dict from timm's tensor names to arrays.
        checkpoint_grid: optional `(rows, columns)` of the checkpoint's patch
            grid. By default the grid is the model's when the token counts
            agree, else square, else of the model's aspect ratio.

    Examples:

    ```python
    model = keras_gmlp.applications.gMLPS(input_shape=(256, 256, 3))
    load_timm_weights(model, "gmlp_s16_224.safetensors")  # 14x14 -> 16x16
    ```
    """
    if isinstance(checkpoint, dict):
        assign_timm_state(model, checkpoint, "(state dict)", checkpoint_grid)
    else:
        assign_timm_state(
            model,
            read_checkpoint(checkpoint),
            repr(os.fspath(checkpoint)),
            checkpoint_grid,
        )


def _source_grid(state, entries, grid, checkpoint_grid):
    """The patch grid the checkpoint's token-indexed tensors cover."""
    token_entries = [
        (key, kind) for key, _, kind in entries if KINDS[kind][2] and key in state
    ]
    if not token_entries:
        return grid
    key, kind = token_entries[0]
    num_tokens = state[key].shape[KINDS[kind][2][0][0]]
    if checkpoint_grid is not None:
        source_grid = tuple(checkpoint_grid)
        if source_grid[0] * source_grid[1] != num_tokens:
            raise ValueError(
                f"The checkpoint has {num_tokens} tokens (from {key}), not "
                f"{source_grid[0]}x{source_grid[1]}. Received: "
                f"checkpoint_grid={checkpoint_grid}"
            )
        return source_grid
    if num_tokens != grid[0] * grid[1]:
        return infer_grid(num_tokens, grid)
    return grid


def _convert(state, entries, source_grid, grid):
    """`(variable, value)` pairs in Keras layout, and the mismatches."""
    converted, mismatched = [], []
    source_tokens = source_grid[0] * source_grid[1]
    for key, variable, kind in entries:
        if key not in state:
            continue
        to_keras, _, token_axes = KINDS[kind]
        value = state[key].astype(np.float32)
        if any(
            axis >= value.ndim or value.shape[axis] != source_tokens
            for axis, _ in token_axes
        ):
            mismatched.append(
                f"{key}: checkpoint {tuple(state[key].shape)}, expected "
                f"{source_tokens} tokens on axes {[a for a, _ in token_axes]}"
            )
            continue
        if source_grid != grid:
            for axis, summed in token_axes:
                value = resample_token_axis(value, axis, source_grid, grid, summed)
        try:
            value = to_keras(value)
        except ValueError:
            pass  # a wrong rank; reported as a shape mismatch below
        if tuple(value.shape) != tuple(variable.shape):
            mismatched.append(
                f"{key}: checkpoint {tuple(state[key].shape)} -> "
                f"{tuple(value.shape)}, model variable {variable.path} "
                f"{tuple(variable.shape)}"
            )
            continue
        converted.append((variable, value))
    return converted, mismatched


def assign_timm_state(model, source, name, checkpoint_grid=None):
    """`load_timm_weights` for a state dict already read; `name` says where
    it came from in the error messages."""
    state = {key: np.asarray(value) for key, value in source.items()}
    grid, entries = model_entries(model)
    expected = {key for key, _, _ in entries}
    has_head = "head.weight" in expected
    missing = [key for key, _, _ in entries if key not in state]
    unexpected = sorted(
        key
        for key in state
        if key not in expected and not (not has_head and key.startswith("head."))
    )
    source_grid = _source_grid(state, entries, grid, checkpoint_grid)
    converted, mismatched = _convert(state, entries, source_grid, grid)
    problems = [
        _format_problems(title, items)
        for title, items in (
            ("missing from the checkpoint", missing),
            ("not used by the model", unexpected),
            ("shapes that do not match", mismatched),
        )
        if items
    ]
    if problems:
        raise ValueError(
            f"The checkpoint {name} does not match the model "
            f"{model.name!r}; no weights were loaded.\n" + "\n".join(problems)
        )
    for variable, value in converted:
        variable.assign(value)


def timm_state_dict(model):
    """Exports an image classifier's weights with timm's names and layouts.

    The result loads into timm's `MlpMixer` of the same configuration
    (`model.load_state_dict({k: torch.from_numpy(v) ...})`), and back into
    a Keras model of another resolution with `load_timm_weights`.

    Args:
        model: a model from `keras_gmlp.applications` (gMLP or Mixer), or
            a `gMLPImageBackbone` / `MLPMixerBackbone`.

    Returns:
        A dict from timm's tensor names to C-contiguous float32 NumPy
        arrays, ready for `safetensors.numpy.save_file` or
        `torch.from_numpy`.

    Examples:

    ```python
    model = keras_gmlp.applications.gMLPTi()
    state = timm_state_dict(model)
    bigger = keras_gmlp.applications.gMLPTi(input_shape=(256, 256, 3))
    load_timm_weights(bigger, state)
    ```
    """
    _, entries = model_entries(model)
    # The layout changes are transposed views; serialisers such as
    # safetensors write an array's raw memory, so each array is packed in
    # row-major order, as `torch.Tensor.contiguous()` would.
    return {
        key: np.ascontiguousarray(
            KINDS[kind][1](keras.ops.convert_to_numpy(variable)),
            dtype=np.float32,
        )
        for key, variable, kind in entries
    }
