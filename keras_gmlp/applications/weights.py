"""Conversion between timm checkpoints and the image classifiers.

timm's `MlpMixer` holds both gMLP (`SpatialGatingBlock`) and MLP-Mixer
(`MixerBlock`) models; its state dicts name tensors `stem.proj.*`,
`blocks.{i}.*`, `norm.*` and `head.*`. Loading converts every tensor to the
Keras layout, checks the whole checkpoint against the model and assigns
only when everything matches, so a bad checkpoint never half-loads.
Token-indexed weights are resampled when the model's patch grid differs
from the checkpoint's.
"""

import hashlib
import os
import re

import keras
import numpy as np

from keras_gmlp.applications.resampling import infer_grid
from keras_gmlp.applications.resampling import resample_token_axis
from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding
from keras_gmlp.layers import gMLPBlock

TIMM_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin")

# Public timm weights, pinned two ways.
# - The Hugging Face repository's `model.safetensors`, read at a fixed commit
#   (a branch such as `main` can move under a user) and checked against its
#   full sha256 by `keras.utils.get_file`, as keras.applications pins its
#   own files. None marks a value this release has not recorded (this code
#   was written without network access); the hub answers a HEAD request for
#   `resolve/main/model.safetensors` with both, the commit in
#   `X-Repo-Commit` and the sha256 in `X-Linked-Etag`.
# - Until then, timm's original release file on GitHub, which timm's own
#   configuration names. Release assets do not change, and by timm's and
#   torch.hub's convention the file name ends in the first 8 hex digits of
#   the file's sha256, which is checked after every download and cached use.
_RELEASES = "https://github.com/rwightman/pytorch-image-models/releases/download"
IMAGENET_WEIGHTS = {
    "gmlp_s16": {
        "repository": "timm/gmlp_s16_224.ra3_in1k",
        "revision": None,  # UNKNOWN: not recorded yet
        "sha256": None,  # UNKNOWN: not recorded yet
        "release": f"{_RELEASES}/v0.1-weights/gmlp_s16_224_raa-10536d42.pth",
    },
    "mixer_b16": {
        "repository": "timm/mixer_b16_224.goog_in21k_ft_in1k",
        "revision": None,  # UNKNOWN: not recorded yet
        "sha256": None,  # UNKNOWN: not recorded yet
        "release": f"{_RELEASES}/v0.1-vitjx/jx_mixer_b16_224-76587d61.pth",
    },
    "mixer_l16": {
        "repository": "timm/mixer_l16_224.goog_in21k_ft_in1k",
        "revision": None,  # UNKNOWN: not recorded yet
        "sha256": None,  # UNKNOWN: not recorded yet
        "release": f"{_RELEASES}/v0.1-vitjx/jx_mixer_l16_224-92f9adc4.pth",
    },
}


# How each kind of tensor goes from timm's layout to Keras' and back, and
# which of its timm axes index tokens: (axis, summed over in the model).
_KINDS = {
    "vector": (lambda w: w, lambda w: w, ()),
    "linear": (lambda w: w.T, lambda w: w.T, ()),
    "conv": (
        lambda w: w.transpose(2, 3, 1, 0),  # (O, I, H, W) -> (H, W, I, O)
        lambda w: w.transpose(3, 2, 0, 1),
        (),
    ),
    # timm's SGU has one head; the Keras layer stacks heads on axis 0.
    "sgu_kernel": (lambda w: w[None], lambda w: w[0], ((0, False), (1, True))),
    "sgu_bias": (lambda w: w[None], lambda w: w[0], ((0, False),)),
    "token_in_kernel": (lambda w: w.T, lambda w: w.T, ((1, True),)),
    "token_out_kernel": (lambda w: w.T, lambda w: w.T, ((0, False),)),
    "token_out_bias": (lambda w: w, lambda w: w, ((0, False),)),
}


def _dense(prefix, layer, kernel_kind="linear", bias_kind="vector"):
    return [
        (f"{prefix}.weight", layer.kernel, kernel_kind),
        (f"{prefix}.bias", layer.bias, bias_kind),
    ]


def _norm(prefix, layer):
    return [
        (f"{prefix}.weight", layer.gamma, "vector"),
        (f"{prefix}.bias", layer.beta, "vector"),
    ]


def _block_entries(index, block):
    prefix = f"blocks.{index}"
    if isinstance(block, gMLPBlock):
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
        channels = f"{prefix}.mlp_channels"
        return (
            _norm(f"{prefix}.norm", block.norm)
            + _dense(f"{channels}.fc1", block.expand_dense)
            + _norm(f"{channels}.gate.norm", sgu.norm)
            + _dense(f"{channels}.gate.proj", sgu, "sgu_kernel", "sgu_bias")
            + _dense(f"{channels}.fc2", block.output_dense)
        )
    return (
        _norm(f"{prefix}.norm1", block.token_norm)
        + _dense(f"{prefix}.mlp_tokens.fc1", block.token_expand_dense,
                 "token_in_kernel")
        + _dense(f"{prefix}.mlp_tokens.fc2", block.token_output_dense,
                 "token_out_kernel", "token_out_bias")
        + _norm(f"{prefix}.norm2", block.channel_norm)
        + _dense(f"{prefix}.mlp_channels.fc1", block.channel_expand_dense)
        + _dense(f"{prefix}.mlp_channels.fc2", block.channel_output_dense)
    )


def _model_entries(model):
    """The model's patch grid and its (timm key, variable, kind) list."""
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
    blocks = [
        layer for layer in model.layers
        if isinstance(layer, (gMLPBlock, MixerBlock))
    ]
    entries = [
        ("stem.proj.weight", stem.projection.kernel, "conv"),
        ("stem.proj.bias", stem.projection.bias, "vector"),
    ]
    for index, block in enumerate(blocks):
        entries += _block_entries(index, block)
    entries += _norm("norm", model.get_layer("norm"))
    if "predictions" in layer_names:
        entries += _dense("head", model.get_layer("predictions"))
    return grid, entries


def read_checkpoint(path):
    """Reads a timm checkpoint into a dict of NumPy arrays.

    `.safetensors` files are read with the safetensors package alone;
    `.pth`, `.pt` and `.bin` files need torch and are opened with
    `weights_only=True`, so loading them runs no pickled code.

    Args:
        path: path of the checkpoint.

    Returns:
        A dict from timm's tensor names to NumPy arrays.

    Examples:

    ```python
    state = read_checkpoint("gmlp_s16_224.safetensors")
    state["blocks.0.mlp_channels.gate.proj.weight"].shape  # (196, 196)
    ```
    """
    path = os.fspath(path)
    if not path.endswith(TIMM_SUFFIXES):
        raise ValueError(
            f"A timm checkpoint must end with one of {TIMM_SUFFIXES}. "
            f"Received: path={path!r}"
        )
    try:
        if path.endswith(".safetensors"):
            from safetensors.numpy import load_file

            return load_file(path)
        try:
            import torch
        except ImportError as error:
            raise ImportError(
                f"Reading {path!r} needs torch; install it, or convert the "
                "checkpoint to .safetensors."
            ) from error
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (ImportError, FileNotFoundError):
        raise
    except Exception as error:
        raise ValueError(
            f"Could not read the checkpoint {path!r}; it may be truncated or "
            f"corrupt ({type(error).__name__}: {error})"
        ) from error
    if not isinstance(state, dict):
        raise ValueError(
            f"The checkpoint {path!r} holds a {type(state).__name__}, not a "
            "state dict (a dict from tensor names to tensors, as "
            "`torch.save(model.state_dict(), path)` writes)."
        )
    # Training scripts wrap the state dict; DataParallel prefixes its keys.
    for wrapper in ("state_dict", "model"):
        if isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    return {
        key.removeprefix("module."): value.detach().float().numpy()
        for key, value in state.items()
        if isinstance(value, torch.Tensor)
    }


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
        model: a model from `keras_gmlp.applications` (gMLP or Mixer).
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
            model, read_checkpoint(checkpoint), repr(os.fspath(checkpoint)),
            checkpoint_grid,
        )


def assign_timm_state(model, source, name, checkpoint_grid=None):
    """`load_timm_weights` for a state dict already read; `name` says where
    it came from in the error messages."""
    state = {key: np.asarray(value) for key, value in source.items()}
    grid, entries = _model_entries(model)
    expected = {key for key, _, _ in entries}
    has_head = "head.weight" in expected
    missing = [key for key, _, _ in entries if key not in state]
    unexpected = sorted(
        key for key in state
        if key not in expected and not (not has_head and key.startswith("head."))
    )

    source_grid = grid
    token_entries = [
        (key, kind) for key, _, kind in entries
        if _KINDS[kind][2] and key in state
    ]
    if token_entries:
        key, kind = token_entries[0]
        num_tokens = state[key].shape[_KINDS[kind][2][0][0]]
        if checkpoint_grid is not None:
            source_grid = tuple(checkpoint_grid)
            if source_grid[0] * source_grid[1] != num_tokens:
                raise ValueError(
                    f"The checkpoint has {num_tokens} tokens (from {key}), "
                    f"not {source_grid[0]}x{source_grid[1]}. Received: "
                    f"checkpoint_grid={checkpoint_grid}"
                )
        elif num_tokens != grid[0] * grid[1]:
            source_grid = infer_grid(num_tokens, grid)

    converted, mismatched = [], []
    for key, variable, kind in entries:
        if key not in state:
            continue
        to_keras, _, token_axes = _KINDS[kind]
        value = state[key].astype(np.float32)
        source_tokens = source_grid[0] * source_grid[1]
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

    if missing or unexpected or mismatched:
        problems = []
        if missing:
            problems.append(_format_problems("missing from the checkpoint", missing))
        if unexpected:
            problems.append(_format_problems("not used by the model", unexpected))
        if mismatched:
            problems.append(_format_problems("shapes that do not match", mismatched))
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
        model: a model from `keras_gmlp.applications` (gMLP or Mixer).

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
    _, entries = _model_entries(model)
    # The layout changes are transposed views; serialisers such as
    # safetensors write an array's raw memory, so each array is packed in
    # row-major order, as `torch.Tensor.contiguous()` would.
    return {
        key: np.ascontiguousarray(
            _KINDS[kind][1](keras.ops.convert_to_numpy(variable)),
            dtype=np.float32,
        )
        for key, variable, kind in entries
    }


def _keras_cache_dir():
    # keras.utils.get_file's default, read at call time so KERAS_HOME set
    # after `import keras` is honoured.
    return os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )


def imagenet_weights_origin(variant):
    """The pinned download URL of `variant`'s ImageNet weights, or None if
    its revision is not recorded."""
    entry = IMAGENET_WEIGHTS[variant]
    if entry["revision"] is None:
        return None
    return (
        f"https://huggingface.co/{entry['repository']}/resolve/"
        f"{entry['revision']}/model.safetensors"
    )


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_imagenet_weights(variant):
    """Path of the cached timm ImageNet checkpoint of `variant`.

    Downloaded once with `keras.utils.get_file` into `$KERAS_HOME/models`
    (default `~/.keras/models`) and verified on download and on every later
    use; a verified cached file is used without network access. Where
    `IMAGENET_WEIGHTS` records the hub repository's revision and sha256, the
    file is that revision's `model.safetensors`; otherwise a
    `model.safetensors` the user saved in the cache under the repository's
    name is used as it is, and failing that timm's original release
    checkpoint (`.pth`, read with torch) is downloaded and checked against
    the sha256 prefix in its name. A file that fails its check is deleted
    and refused, and no weights are loaded.

    Args:
        variant: a key of `IMAGENET_WEIGHTS`, e.g. `"gmlp_s16"`.

    Returns:
        The local path of the checkpoint.

    Examples:

    ```python
    path = fetch_imagenet_weights("gmlp_s16")
    ```
    """
    entry = IMAGENET_WEIGHTS[variant]
    repository, sha256 = entry["repository"], entry["sha256"]
    file_name = repository.split("/")[-1] + ".safetensors"
    cache_dir = _keras_cache_dir()
    target = os.path.join(cache_dir, "models", file_name)
    origin = imagenet_weights_origin(variant)
    if origin is None or sha256 is None:
        if os.path.isfile(target):
            return target
        return _fetch_release_checkpoint(variant, entry["release"], cache_dir, target, repository)
    try:
        return keras.utils.get_file(
            file_name,
            origin,
            file_hash=sha256,
            hash_algorithm="sha256",
            cache_dir=cache_dir,
            cache_subdir="models",
        )
    except ValueError as error:
        # get_file leaves a downloaded file that fails the check in place.
        if os.path.isfile(target) and _sha256(target) != sha256:
            os.remove(target)
        raise ValueError(
            f"The ImageNet weights of {variant} downloaded from {origin} do "
            f"not have the pinned sha256 {sha256}; the file was deleted and "
            f"no weights were loaded ({error})"
        ) from error
    except Exception as error:
        raise _offline_error(variant, origin, target) from error


def _fetch_release_checkpoint(variant, origin, cache_dir, hub_target, repository):
    """Downloads timm's release checkpoint `origin` once and checks its
    sha256 against the 8-hex-digit prefix at the end of its name."""
    file_name = origin.rsplit("/", 1)[-1]
    prefix = re.search(r"-([0-9a-f]{8,})\.pth$", file_name).group(1)
    try:
        path = keras.utils.get_file(
            file_name, origin, cache_dir=cache_dir, cache_subdir="models"
        )
    except Exception as error:
        target = os.path.join(cache_dir, "models", file_name)
        raise OSError(
            f"Could not download the ImageNet weights of {variant} from "
            f"{origin}. Without network access, download that file elsewhere "
            f"and save it as {target}, or save the `model.safetensors` of "
            f"https://huggingface.co/{repository} as {hub_target}; it is then "
            "loaded offline. Or pass a checkpoint's path as `weights=`."
        ) from error
    digest = _sha256(path)
    if not digest.startswith(prefix):
        os.remove(path)
        raise ValueError(
            f"The ImageNet weights of {variant} from {origin} have sha256 "
            f"{digest}, which does not start with {prefix} as the file name "
            "says; the file was deleted and no weights were loaded."
        )
    return path


def _offline_error(variant, origin, target):
    return OSError(
        f"Could not download the ImageNet weights of {variant} from {origin}. "
        f"Without network access, download that file elsewhere and save it "
        f"as {target}; it is then verified and loaded offline. Or pass a "
        "checkpoint's path as `weights=`."
    )
