"""TensorFlow beside JAX or PyTorch feeds input only: the programs hide
the GPUs from it (applications/_shared/tensorflow_input.py).

Cost per backend: milliseconds (TensorFlow is imported already).
"""

import keras
import pytest
from _shared import tensorflow_input

tf = pytest.importorskip("tensorflow")


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_tensorflow_sees_no_gpu_unless_keras_runs_on_it(backend, monkeypatch):
    calls = []
    real = tf.config.set_visible_devices

    def recording(devices, device_type=None):
        calls.append((list(devices), device_type))
        return real(devices, device_type)

    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    monkeypatch.setattr(tf.config, "set_visible_devices", recording)
    hidden = tensorflow_input.keep_tensorflow_off_gpus()
    if backend == "tensorflow":
        assert (hidden, calls) == (False, [])
    else:
        assert (hidden, calls) == (True, [([], "GPU")])
        assert tf.config.get_visible_devices("GPU") == []
        # The CPU stays: TensorFlow still runs the input pipeline.
        assert tf.config.get_visible_devices("CPU")


def test_without_tensorflow_nothing_is_hidden(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tensorflow(name, *args, **kwargs):
        if name.split(".")[0] == "tensorflow":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(builtins, "__import__", no_tensorflow)
    assert tensorflow_input.keep_tensorflow_off_gpus() is False
