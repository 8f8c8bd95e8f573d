"""Downloading pinned public checkpoints into the Keras cache.

A checkpoint is pinned two ways (see `IMAGENET_WEIGHTS` in
`keras_gmlp.applications.weights`, built from the variant tables):
- a Hugging Face repository's `model.safetensors` at a fixed commit (a
  branch such as `main` can move under a user), checked against its full
  sha256 by `keras.utils.get_file` on download and on every later use, as
  keras.applications pins its files;
- while that commit is not recorded, timm's original release file, whose
  name ends, by timm's and torch.hub's convention, in the first 8 hex
  digits of its sha256: only those 8 digits are checked at download. The
  file's size and full sha256 are then written to a stamp next to it, and
  every later use checks the file against the stamp.

Every check hashes the file's bytes with hashlib; none needs torch.
"""

import hashlib
import json
import os
import re

import keras

from keras_gmlp.utils.preset_files import failure_reason

STAMP_SUFFIX = ".sha256.json"


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


def write_stamp(path):
    """Records `path`'s size and sha256 in `path + STAMP_SUFFIX`, written
    to a temporary name and renamed, so a stamp is whole or absent."""
    stamp = {"size": os.path.getsize(path), "sha256": sha256_of_file(path)}
    temporary = f"{path}{STAMP_SUFFIX}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(stamp, file)
    os.replace(temporary, path + STAMP_SUFFIX)


def check_stamp(label, path):
    """Raises unless `path` has the size and sha256 of its stamp. A file
    without a stamp is stamped now (first use)."""
    try:
        with open(path + STAMP_SUFFIX, encoding="utf-8") as file:
            stamp = json.load(file)
        size, sha256 = int(stamp["size"]), str(stamp["sha256"])
    except FileNotFoundError:
        write_stamp(path)
        return
    except (ValueError, KeyError, TypeError):
        raise ValueError(
            f"The stamp {path}{STAMP_SUFFIX} of the ImageNet weights of "
            f"{label} is damaged; delete it and {path} to download again."
        ) from None
    if os.path.getsize(path) != size or sha256_of_file(path) != sha256:
        raise ValueError(
            f"The cached ImageNet weights of {label}, {path}, changed since "
            f"they were downloaded (size or sha256 differs from "
            f"{path}{STAMP_SUFFIX}); no weights were loaded. Delete the file "
            "to download it again."
        )


def fetch_pinned_checkpoint(label, entry):
    """Path of the cached checkpoint of a pinned weights entry.

    Downloaded once with `keras.utils.get_file` into `$KERAS_HOME/models`.
    With a recorded revision and sha256, the file is checked against that
    sha256 on download and on every later use. Without them, a
    `model.safetensors` the user saved in the cache under the repository's
    name is used, and failing that the release file is downloaded and
    checked against the 8-digit sha256 prefix in its name; either file is
    stamped (size and sha256) at its first use and checked against the
    stamp at every later use. A download that fails its check is deleted
    and refused; a cached file that changed is refused.

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
            check_stamp(label, target)
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
        ) from None
    except Exception as error:
        raise OSError(
            f"Could not download the ImageNet weights of {label} from "
            f"{origin} ({failure_reason(error)}). Without network access, "
            f"download that file elsewhere and save it as {target}; it is "
            "then verified and loaded offline. Or pass a checkpoint's path "
            "as `weights=`."
        ) from None


def _fetch_release(label, origin, cache_dir, hub_target, repository):
    file_name = origin.rsplit("/", 1)[-1]
    path = os.path.join(cache_dir, "models", file_name)
    if os.path.isfile(path) and os.path.isfile(path + STAMP_SUFFIX):
        check_stamp(label, path)
        return path
    prefix = re.search(r"-([0-9a-f]{8,})\.pth$", file_name).group(1)
    try:
        path = keras.utils.get_file(
            file_name, origin, cache_dir=cache_dir, cache_subdir="models"
        )
    except Exception as error:
        raise OSError(
            f"Could not download the ImageNet weights of {label} from "
            f"{origin} ({failure_reason(error)}). Without network access, "
            f"download that file elsewhere and save it as {path}, or save "
            f"the `model.safetensors` of https://huggingface.co/{repository} "
            f"as {hub_target}; it is then loaded offline. Or pass a "
            "checkpoint's path as `weights=`."
        ) from None
    digest = sha256_of_file(path)
    if not digest.startswith(prefix):
        os.remove(path)
        raise ValueError(
            f"The ImageNet weights of {label} from {origin} have sha256 "
            f"{digest}, which does not start with {prefix} as the file name "
            "says; the file was deleted and no weights were loaded."
        )
    write_stamp(path)
    return path
