import os
import subprocess
import sys

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHECK = """
import sys
import keras_gmlp
import keras_gmlp.layers
import keras_gmlp.applications
import keras_gmlp.distribution
import keras
# Every saved class is registered (lazily), so load_model needs no other import.
for name in keras_gmlp.models.__all__:
    assert keras.saving.get_registered_object("keras_gmlp>" + name), name
heavy = sorted(m for m in ("tensorflow", "keras_hub") if m in sys.modules)
assert not heavy, f"importing keras_gmlp pulled in {heavy}"
"""


def test_library_import_stays_light():
    """Under jax and torch, keras_gmlp, its layers and the image
    applications load without keras-hub or TensorFlow. Checked in the run
    of the same backend (the TensorFlow backend imports TensorFlow)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        pytest.skip("the TensorFlow backend imports TensorFlow by design")
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
