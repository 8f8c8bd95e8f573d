"""float32 matmul precision on the current Keras backend: full float32
(TF32 off) or the backend's default (TF32 on Hopper for JAX's matmuls and
PyTorch's convolutions)."""

import contextlib

import keras


@contextlib.contextmanager
def float32_precision(highest):
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        saved = jax.config.jax_default_matmul_precision
        jax.config.update(
            "jax_default_matmul_precision", "highest" if highest else None
        )
        try:
            yield
        finally:
            jax.config.update("jax_default_matmul_precision", saved)
    elif backend == "torch":
        import torch

        from _accelerator import torch_timing

        with torch_timing.float32_precision(torch, highest):
            yield
    else:
        yield


def synchronize(output):
    """Waits until the device has computed `output` (Keras' `*_on_batch`
    return host values already; `generate` returns device tensors)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        jax.block_until_ready(output)
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return output
