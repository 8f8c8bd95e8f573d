"""Downloading pinned public checkpoints into the Keras cache.

A checkpoint is pinned two ways (see `IMAGENET_WEIGHTS` in
`keras_gmlp.applications.weights`, built from the variant tables):
- a Hugging Face repository's `model.safetensors` at a fixed commit (a
  branch such as `main` can move under a user), checked against its full
  sha256 by `keras.utils.get_file`, as keras.applications pins its files;
- while that commit is not recorded, timm's original release file, whose
  name ends, by timm's and torch.hub's convention, in the first 8 hex
  digits of its sha256, checked after every download and cached use.
"""

import hashlib
import os
import re

import keras


def keras_cache_dir():
    """`keras.utils.get_file`'s default cache, read at call time so a
    `KERAS_HOME` set after `import keras` is honoured."""
    return os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )


def pinned_origin(entry):
    """The pinned download URL of a weights entry, or None if its revision
    is not recorded."""
    if entry["revision"] is None:
        return None
    return (
        f"https://huggingface.co/{entry['repository']}/resolve/"
        f"{entry['revision']}/model.safetensors"
    )


def sha256_of_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_pinned_checkpoint(label, entry):
    """Path of the cached checkpoint of a pinned weights entry.

    Downloaded once with `keras.utils.get_file` into `$KERAS_HOME/models`
    and verified on download and on every later use. Without a recorded
    revision, a `model.safetensors` the user saved in the cache under the
    repository's name is used as it is, and failing that the release file
    is downloaded and checked against the sha256 prefix in its name. A file
    that fails its check is deleted and refused.

    Args:
        label: what the weights are, for error messages (e.g. `"gmlp_s16"`).
        entry: dict with `repository`, `revision`, `sha256` and `release`.

    Returns:
        The local path of the checkpoint.
    """
    repository, sha256 = entry["repository"], entry["sha256"]
    file_name = repository.split("/")[-1] + ".safetensors"
    cache_dir = keras_cache_dir()
    target = os.path.join(cache_dir, "models", file_name)
    origin = pinned_origin(entry)
    if origin is None or sha256 is None:
        if os.path.isfile(target):
            return target
        return _fetch_release(label, entry["release"], cache_dir, target, repository)
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
        if os.path.isfile(target) and sha256_of_file(target) != sha256:
            os.remove(target)
        raise ValueError(
            f"The ImageNet weights of {label} downloaded from {origin} do "
            f"not have the pinned sha256 {sha256}; the file was deleted and "
            f"no weights were loaded ({error})"
        ) from error
    except Exception as error:
        raise OSError(
            f"Could not download the ImageNet weights of {label} from "
            f"{origin}. Without network access, download that file elsewhere "
            f"and save it as {target}; it is then verified and loaded "
            "offline. Or pass a checkpoint's path as `weights=`."
        ) from error


def _fetch_release(label, origin, cache_dir, hub_target, repository):
    file_name = origin.rsplit("/", 1)[-1]
    prefix = re.search(r"-([0-9a-f]{8,})\.pth$", file_name).group(1)
    try:
        path = keras.utils.get_file(
            file_name, origin, cache_dir=cache_dir, cache_subdir="models"
        )
    except Exception as error:
        target = os.path.join(cache_dir, "models", file_name)
        raise OSError(
            f"Could not download the ImageNet weights of {label} from "
            f"{origin}. Without network access, download that file elsewhere "
            f"and save it as {target}, or save the `model.safetensors` of "
            f"https://huggingface.co/{repository} as {hub_target}; it is then "
            "loaded offline. Or pass a checkpoint's path as `weights=`."
        ) from error
    digest = sha256_of_file(path)
    if not digest.startswith(prefix):
        os.remove(path)
        raise ValueError(
            f"The ImageNet weights of {label} from {origin} have sha256 "
            f"{digest}, which does not start with {prefix} as the file name "
            "says; the file was deleted and no weights were loaded."
        )
    return path
