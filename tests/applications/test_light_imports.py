import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK = """
import sys
import keras_gmlp.applications
import keras_gmlp.visualization
keras_gmlp.applications.gMLPS, keras_gmlp.applications.MixerB16
heavy = sorted(
    m for m in ("tensorflow", "keras_hub", "torch", "safetensors")
    if m in sys.modules
)
assert not heavy, f"importing the image applications pulled in {heavy}"
"""


def test_image_applications_import_only_keras_under_jax():
    """torch and safetensors load only when a checkpoint is read;
    TensorFlow and keras-hub never."""
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
