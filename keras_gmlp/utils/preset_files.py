"""One file of a preset: a local directory or a Hugging Face repository.

keras-hub has no public function for this, so the public clients are used
directly: `huggingface_hub.hf_hub_download` for `hf://` handles (cached in
the hub's cache, at a given revision) and the file system for local
directories. Other schemes (`kaggle://`, ...) are keras-hub's to resolve.
"""

import os

HF_SCHEME = "hf://"


def is_local_or_hf(preset):
    """Whether `preset_file` can read `preset`."""
    return isinstance(preset, str) and (
        preset.startswith(HF_SCHEME) or os.path.isdir(preset)
    )


def preset_file(preset, file_name, revision=None):
    """The local path of `file_name` in `preset`, downloaded if needed.

    Args:
        preset: a local directory or an `hf://<owner>/<repository>` handle.
        file_name: the file's name inside the preset.
        revision: optional commit, branch or tag of an `hf://` repository;
            `None` for its default branch.

    Returns:
        A path on the local file system.

    Raises:
        FileNotFoundError: the preset has no such file.
        ValueError: `preset` is neither a directory nor an `hf://` handle.

    Examples:

    ```python
    path = preset_file("hf://timm/gmlp_s16_224.ra3_in1k", "config.json")
    ```
    """
    if isinstance(preset, str) and preset.startswith(HF_SCHEME):
        return _hub_file(preset, file_name, revision)
    if isinstance(preset, str) and os.path.isdir(preset):
        path = os.path.join(preset, file_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"`{file_name}` doesn't exist in preset directory `{preset}`."
            )
        return path
    raise ValueError(
        "A preset must be a local directory or an `hf://` handle. "
        f"Received: preset={preset!r}"
    )


def _hub_file(preset, file_name, revision):
    # Looked up on the module at call time, so tests can serve files.
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.errors import HFValidationError

    repo_id = preset.removeprefix(HF_SCHEME)
    try:
        return huggingface_hub.hf_hub_download(
            repo_id=repo_id, filename=file_name, revision=revision
        )
    except HFValidationError as error:
        raise ValueError(
            "Hugging Face handles have the form 'hf://<owner>/<repository>'. "
            f"Received: preset={preset!r}"
        ) from error
    except EntryNotFoundError as error:
        raise FileNotFoundError(
            f"`{file_name}` doesn't exist in preset directory `{preset}`."
        ) from error
