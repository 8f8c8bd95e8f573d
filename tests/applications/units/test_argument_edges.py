"""Arguments at their edges: a drop-path list of one rate per block (longer
or shorter is refused), token ids checked whether a direct call gets them
by position or by keyword, the image backbone's `gating` kept by its
config and its presets, and a plain install (no keras-hub) told in one line
which extra every public entry that needs keras-hub takes."""

import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_gmlp.layers._patch_mlp import block_drop_path_rates

ROOT = str(pathlib.Path(__file__).resolve().parents[3])


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "rates", [[0.1, 0.2], [0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3] * 2]
)
def test_a_drop_path_list_of_another_length_than_the_blocks_is_refused(rates):
    with pytest.raises(ValueError, match="a list of 3 such rates, one per block"):
        block_drop_path_rates(rates, 3)


@pytest.mark.backend_independent
def test_a_drop_path_list_gives_each_block_its_rate():
    assert block_drop_path_rates([0.3, 0.0, 0.1], 3) == [0.3, 0.0, 0.1]
    assert block_drop_path_rates((0.2,), 1) == [0.2]
    # A float: linear from 0 to it over the blocks (0, 0.1, 0.2).
    np.testing.assert_allclose(block_drop_path_rates(0.2, 3), [0.0, 0.1, 0.2])


def text_backbone():
    from keras_gmlp.models import gMLPBackbone

    return gMLPBackbone(
        vocabulary_size=10,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=4,
    )


def text_inputs(token_ids):
    token_ids = np.array(token_ids, "int32")
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
    }


@pytest.mark.parametrize("by", ["position", "keyword"])
def test_a_direct_call_checks_token_ids_by_position_and_by_keyword(by):
    backbone = text_backbone()

    def call(inputs):
        return backbone(inputs) if by == "position" else backbone(inputs=inputs)

    # Ids 0 to 9 are the vocabulary; 10 is past it.
    outputs = call(text_inputs([[2, 9, 0, 0]]))
    assert tuple(outputs["sequence_output"].shape) == (1, 4, 8)
    with pytest.raises(ValueError, match="token_ids"):
        call(text_inputs([[2, 10, 0, 0]]))
    with pytest.raises(ValueError, match="token_ids"):
        call(text_inputs([[2, -1, 0, 0]]))


def image_backbone(gating):
    from keras_gmlp.models import gMLPImageBackbone

    return gMLPImageBackbone(
        patch_size=4,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=12,
        image_shape=(8, 8, 3),
        gating=gating,
    )


def test_the_image_backbone_keeps_its_gating_in_config_and_presets(tmp_path):
    from keras_gmlp.models import gMLPImageBackbone

    multiplicative = image_backbone("multiplicative")
    # By hand: the stem 4 * 4 * 3 * 8 + 8; per block the norm 2 * 8, expand
    # 8 * 12 + 12, the unit's 4 x 4 kernel and 4 biases, its norm over all
    # 12 gated channels (split: 6) 2 * 12, output 12 * 8 + 8; a final norm.
    block = 2 * 8 + (8 * 12 + 12) + (16 + 4) + 2 * 12 + (12 * 8 + 8)
    assert multiplicative.count_params() == 392 + 2 * block + 2 * 8
    assert multiplicative.get_config()["gating"] == "multiplicative"
    rng = np.random.default_rng(0)
    for weight in multiplicative.weights:
        weight.assign(0.3 * rng.standard_normal(weight.shape))
    multiplicative.save_to_preset(str(tmp_path / "preset"))
    restored = gMLPImageBackbone.from_preset(str(tmp_path / "preset"))
    assert restored.gating == "multiplicative"
    # The same weights in the same layout (no forward pass: seconds on JAX).
    assert [w.path for w in restored.weights] == [
        w.path for w in multiplicative.weights
    ]
    for loaded, saved in zip(restored.weights, multiplicative.weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(loaded), keras.ops.convert_to_numpy(saved)
        )


WITHOUT_HUB = """
import importlib.abc
import sys


class NoHub(importlib.abc.MetaPathFinder):
    # As if the `hub` extra were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keras_hub":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoHub())
import numpy as np

import keras_gmlp.applications
from keras_gmlp.utils.variants import GMLP_TEXT_VARIANTS

# ImageNet's class names ship with keras-gmlp: no keras-hub needed.
goldfish = np.eye(1000, dtype="float32")[1:2]
print(repr(keras_gmlp.applications.decode_predictions(goldfish, top=1)[0][0][:2]))
entries = [("models", lambda: __import__("keras_gmlp.models"))]
for row in GMLP_TEXT_VARIANTS.values():
    builder = getattr(keras_gmlp.applications, row["builder"])
    entries.append((row["builder"], lambda b=builder: b(include_top=False)))
for name, entry in entries:
    try:
        entry()
    except ImportError as error:
        assert error.__cause__ is None and error.__suppress_context__, name
        print(repr(str(error)))
    else:
        print(name, "ran")
"""


@pytest.mark.backend_independent
def test_every_entry_that_needs_keras_hub_names_the_extra_in_one_line():
    """And decode_predictions, which does not need it, decodes."""
    from keras_gmlp.utils.variants import GMLP_TEXT_VARIANTS

    # The numpy backend: no framework to import, and none is needed.
    env = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND="numpy")
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_HUB], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    install = 'needs keras-hub: pip install "keras-gmlp[hub]"'
    builders = [row["builder"] for row in GMLP_TEXT_VARIANTS.values()]
    assert len(builders) == 4
    names = ["models"] + [f"applications.{b}" for b in builders]
    assert result.stdout.splitlines() == [repr(("n01443537", "goldfish"))] + [
        repr(f"keras_gmlp.{name} {install}") for name in names
    ]
