import inspect

import keras
import pytest

# Keras 3.14 and later can clear a session without a full garbage
# collection (about 0.25 s, most of the time of a test here).
_FAST_CLEAR = "free_memory" in inspect.signature(keras.backend.clear_session).parameters


@pytest.fixture(autouse=True)
def reset_keras_state(request):
    """tests/conftest.py's reset, without its garbage collection: these
    tests make small objects only. Flag, file and text tests make no Keras
    state and skip it."""
    if request.node.get_closest_marker("backend_independent"):
        yield
        return
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1337)
    yield
    keras.config.set_dtype_policy("float32")
    if _FAST_CLEAR:
        keras.backend.clear_session(free_memory=False)
    else:
        keras.backend.clear_session()
