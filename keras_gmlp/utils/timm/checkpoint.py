"""Reading timm checkpoint files into NumPy state dicts."""

import os

TIMM_SUFFIXES = (".safetensors", ".pth", ".pt", ".bin")


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
    return _tensors_of(state, path, torch)


def _tensors_of(state, path, torch):
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
