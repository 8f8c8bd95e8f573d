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


MISSING_HUB = """
import sys
sys.modules["keras_hub"] = None  # as if the `hub` extra were not installed
import keras_gmlp.applications
for load in (
    lambda: __import__("keras_gmlp.models"),
    lambda: keras_gmlp.applications.gMLPBase(include_top=False),
):
    try:
        load()
    except ImportError as error:
        assert error.__cause__ is None and error.__suppress_context__
        print(error)
"""


def test_missing_hub_extra_is_one_line_naming_it():
    """Without keras-hub, `keras_gmlp.models` and the text builders raise
    one line that says which extra to install; the applications import."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    result = subprocess.run(
        [sys.executable, "-c", MISSING_HUB], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    install = 'needs keras-hub: pip install "keras-gmlp[hub]"'
    assert result.stdout.splitlines() == [
        f"keras_gmlp.models {install}",
        f"keras_gmlp.applications.gMLPBase {install}",
    ]
