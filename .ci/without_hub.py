"""Run in an environment installed with `pip install -e ".[jax]"`, without
the `hub` extra (.ci/run, lane 5): a plain install has neither keras-hub nor
TensorFlow, yet loads timm checkpoints into the image builders, reproduces
timm's logits, saves and reloads `.keras` files, and says in one line which
extra `keras_gmlp.models` needs.

    KERAS_BACKEND=jax python .ci/without_hub.py
"""

import importlib.util
import os
import pathlib
import sys
import tempfile

# The checkout's root, for tests.applications.helpers.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import keras
import numpy as np

import keras_gmlp
from keras_gmlp.applications import load_timm_weights
from keras_gmlp.applications import timm_state_dict
from keras_gmlp.utils.timm.checkpoint import read_checkpoint
from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path

HEAVY = ("tensorflow", "keras_hub")


def check_not_installed():
    installed = [name for name in HEAVY if importlib.util.find_spec(name)]
    assert not installed, f"a plain install brought {installed}"


def check_timm_family(family, directory):
    """Loads the timm fixture, matches timm's logits, exports the same
    tensors back, and round-trips the model through a `.keras` file."""
    golden = np.load(fixture_path(family, ".npz"))
    checkpoint = fixture_path(family, ".safetensors")
    model = build_tiny(family)
    load_timm_weights(model, checkpoint)
    logits = keras.ops.convert_to_numpy(model(golden["images"]))
    error = np.max(np.abs(logits - golden["logits"]))
    assert error <= 1e-4, f"{family}: {error} from timm's logits"
    exported = timm_state_dict(model)
    for key, value in read_checkpoint(checkpoint).items():
        np.testing.assert_array_equal(exported[key], value, err_msg=key)

    path = os.path.join(directory, f"{family}.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    again = keras.ops.convert_to_numpy(reloaded(golden["images"]))
    np.testing.assert_array_equal(again, logits, err_msg=f"{family} reloaded")


def check_hub_error(build, name):
    """`build()` raises one line that names the `hub` extra."""
    try:
        build()
    except ImportError as error:
        message = str(error)
        expected = f'{name} needs keras-hub: pip install "keras-gmlp[hub]"'
        assert message == expected, message
        assert error.__suppress_context__ and error.__cause__ is None
        return
    raise AssertionError(f"{name} worked without keras-hub")


def main():
    check_not_installed()
    assert keras.backend.backend() == "jax", keras.backend.backend()
    with tempfile.TemporaryDirectory() as directory:
        for family in ("gmlp", "mixer"):
            check_timm_family(family, directory)
    goldfish = np.eye(1000, dtype="float32")[1:2]
    decoded = keras_gmlp.applications.decode_predictions(goldfish, top=1)
    assert decoded[0][0][:2] == ("n01443537", "goldfish"), decoded
    check_hub_error(lambda: __import__("keras_gmlp.models"), "keras_gmlp.models")
    check_hub_error(
        lambda: keras_gmlp.applications.gMLPBase(include_top=False),
        "keras_gmlp.applications.gMLPBase",
    )
    loaded = sorted(name for name in HEAVY if name in sys.modules)
    assert not loaded, loaded
    print(
        "no keras-hub or TensorFlow installed; the timm gMLP and Mixer "
        "fixtures match timm and reload from .keras; decode_predictions "
        "decodes; keras_gmlp.models names the hub extra"
    )


if __name__ == "__main__":
    main()
