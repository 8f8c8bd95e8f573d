import os
import subprocess
import sys

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LIGHT = """
import sys
import keras_gmlp
import keras_gmlp.layers
import keras_gmlp.applications
import keras_gmlp.distribution
keras_gmlp.applications.gMLPS, keras_gmlp.applications.gMLPBase
heavy = sorted(m for m in ("tensorflow", "keras_hub") if m in sys.modules)
assert not heavy, f"importing keras_gmlp pulled in {heavy}"
"""

REGISTERED = """
import keras
import keras_gmlp.models
for name in keras_gmlp.models.__all__:
    registered = keras.saving.get_registered_object("keras_gmlp>" + name)
    assert registered is getattr(keras_gmlp.models, name), name
"""


def run(code, backend):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_library_import_stays_light():
    """Under jax and torch, keras_gmlp, its layers and the applications
    load without keras-hub or TensorFlow. Checked in the run of the same
    backend (the TensorFlow backend imports TensorFlow by design)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        pytest.skip("the TensorFlow backend imports TensorFlow by design")
    result = run(LIGHT, backend)
    assert result.returncode == 0, result.stderr[-2000:]


def test_models_import_registers_the_real_classes():
    """In a fresh process, the one import the README names for loading
    models is enough for Keras to find every class."""
    result = run(REGISTERED, keras.backend.backend())
    assert result.returncode == 0, result.stderr[-2000:]
