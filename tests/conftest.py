import os
import shutil
import tempfile

# Programs, guides and benchmarks run in subprocesses, and several tests run
# the same program on the same shapes (an interrupted run and its resume, a
# default run and a flag's run). JAX's persistent compilation cache lets those
# processes share compiled XLA programs instead of compiling each again: the
# pretraining resume test took 72 s without it and 51 s with it. The
# directory is this session's own, so no run reuses another's entries; a
# cache directory the caller chose is kept. Set before keras imports jax.
_SESSION_JAX_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _SESSION_JAX_CACHE = tempfile.mkdtemp(prefix="keras-gmlp-tests-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _SESSION_JAX_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

import keras
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def reset_keras_state():
    """Each test starts from float32, a fixed seed and a fresh name scope."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_unconfigure(config):
    if _SESSION_JAX_CACHE is not None:
        shutil.rmtree(_SESSION_JAX_CACHE, ignore_errors=True)
