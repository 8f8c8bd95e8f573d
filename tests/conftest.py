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
