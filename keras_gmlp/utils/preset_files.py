"""One file of a preset: a local directory or a Hugging Face repository.

keras-hub has no public function for this, so the public clients are used
directly: `huggingface_hub.hf_hub_download` for `hf://` handles (cached in
the hub's cache, at a given revision) and the file system for local
directories. Other schemes (`kaggle://`, ...) are keras-hub's to resolve.
"""

import os

HF_SCHEME = "hf://"
# Seconds for one metadata request to the hub.
ETAG_TIMEOUT = 4


def is_local_or_hf(preset):
    """Whether `preset_file` can read `preset`.

    Args:
        preset: a preset handle: an `hf://owner/name` repository or a local
            directory; anything else (a keras-hub preset name) is not.

    Returns:
        True for an `hf://` handle or an existing directory.

    Examples:

    ```python
    is_local_or_hf("hf://timm/gmlp_s16_224.ra3_in1k")  # True
    is_local_or_hf("gmlp_s16_224")  # False (unless such a folder exists)
    ```
    """
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
        A path on the local file system. An `hf://` file is requested
        once (no retries); without network, or with `HF_HUB_OFFLINE=1`,
        a copy in the Hugging Face cache is used.

    Raises:
        FileNotFoundError: the preset, its revision or the file does not
            exist.
        PermissionError: the repository is gated.
        HubUnavailableError: (a `ConnectionError`) the hub could not be
            reached and the file is not cached.
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


class HubUnavailableError(ConnectionError):
    """The Hugging Face Hub could not be reached and the file is not in the
    local cache.

    Args:
        *args: the message, as for any `ConnectionError`.

    Examples:

    ```python
    try:
        path = preset_file("hf://timm/gmlp_s16_224.ra3_in1k", "config.json")
    except HubUnavailableError as error:
        print(error)  # what the hub reported, and how to use a local copy
    ```
    """


def _hub_offline():
    # huggingface_hub reads HF_HUB_OFFLINE at import; a later setting in
    # the environment is honoured too.
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    return bool(constants.HF_HUB_OFFLINE) or flag in {"1", "ON", "YES", "TRUE"}


def _local_copy_hint(repo_id):
    return (
        f"To use a local copy, download it where there is network with "
        f"`hf download {repo_id} --local-dir DIR` and pass DIR to from_preset."
    )


def _hub_file(preset, file_name, revision):
    # Looked up on the module at call time, so tests can serve files.
    import huggingface_hub
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    repo_id = preset.removeprefix(HF_SCHEME)
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise ValueError(
            "Hugging Face handles have the form 'hf://<owner>/<repository>'. "
            f"Received: preset={preset!r}"
        ) from None
    if _hub_offline():
        reason = "HF_HUB_OFFLINE is set"
    else:
        reason = _probe_hub(preset, repo_id, file_name, revision)
    try:
        return huggingface_hub.hf_hub_download(
            repo_id=repo_id,
            filename=file_name,
            revision=revision,
            local_files_only=reason is not None,
        )
    except Exception as error:
        if reason is None:
            _raise_hub_error(error, preset, repo_id, file_name, revision)
            raise
    at = f" at revision {revision!r}" if revision else ""
    raise HubUnavailableError(
        f"Could not download `{file_name}` of {preset}{at} ({reason}), and "
        f"no copy is in the Hugging Face cache. {_local_copy_hint(repo_id)}"
    ) from None


def failure_reason(error):
    """The first line of what went wrong, with the error's type: Keras'
    get_file raises a bare `Exception` whose text holds the URL error,
    and huggingface_hub's errors are long.

    Args:
        error: the exception a download raised.

    Returns:
        str: the error's type, a colon and the first line of its message.

    Examples:

    ```python
    failure_reason(OSError("no route to host\nmore detail"))
    # 'OSError: no route to host'
    ```
    """
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}".rstrip(": ")


def _probe_hub(preset, repo_id, file_name, revision):
    """One request for the file's metadata, without huggingface_hub's
    retries (`hf_hub_download` retries for a minute when nothing is
    cached). Returns why the hub is unreachable, or None; raises for a
    missing repository, revision or file."""
    import huggingface_hub

    url = huggingface_hub.hf_hub_url(repo_id, file_name, revision=revision)
    try:
        huggingface_hub.get_hf_file_metadata(url, timeout=ETAG_TIMEOUT)
    except Exception as error:
        _raise_hub_error(error, preset, repo_id, file_name, revision)
        return f"no network: {failure_reason(error)}"
    return None


def _raise_hub_error(error, preset, repo_id, file_name, revision):
    """Raises a one-line error for what the hub reported, or returns when
    `error` is not one of its answers (a network failure)."""
    from huggingface_hub import errors

    hint = _local_copy_hint(repo_id)
    if isinstance(error, errors.GatedRepoError):
        raise PermissionError(
            f"{preset} is a gated repository: accept its conditions on "
            f"https://huggingface.co/{repo_id} and log in with `hf auth "
            f"login`. {hint}"
        ) from None
    if isinstance(error, errors.RepositoryNotFoundError):
        raise FileNotFoundError(
            f"The Hugging Face Hub has no repository {repo_id!r} (or it is "
            f"private); check the handle {preset!r}. {hint}"
        ) from None
    if isinstance(error, errors.RevisionNotFoundError):
        raise FileNotFoundError(
            f"The Hugging Face repository of {preset} has no revision "
            f"{revision!r}. {hint}"
        ) from None
    if isinstance(error, errors.EntryNotFoundError) and not isinstance(
        error, errors.LocalEntryNotFoundError
    ):
        raise FileNotFoundError(
            f"`{file_name}` doesn't exist in preset {preset}"
            + (f" at revision {revision!r}." if revision else ".")
        ) from None
