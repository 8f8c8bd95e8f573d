"""Multi-device training: layout map rules, keras.distribution on JAX,
tf.distribute on TensorFlow.

The multi-device checks run in subprocesses (`_jax_worker.py`,
`_tf_worker.py`) because device counts are fixed when the backend starts;
they run the same way whatever KERAS_BACKEND this pytest run uses. The rule
tests run in-process on every backend: a LayoutMap needs no devices.
"""

import json
import os
import re
import subprocess
import sys

import keras
import pytest

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.distribution import get_layout_map
from keras_gmlp.distribution.layout_map import _RULES

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_worker(script, *args):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def jax_results():
    return run_worker("_jax_worker.py")


def mesh(shape=(2, 4)):
    # Device names are only looked at when a layout is applied.
    return keras.distribution.DeviceMesh(
        shape, ("batch", "model"), devices=[f"cpu:{i}" for i in range(8)]
    )


def model_paths():
    from keras_gmlp.models import gMLPBackbone

    models = (
        gMLP(
            num_blocks=1,
            hidden_dim=16,
            intermediate_dim=64,
            patch_size=2,
            input_shape=(8, 8, 3),
            classes=10,
        ),
        MLPMixer(
            num_blocks=1,
            hidden_dim=16,
            tokens_mlp_dim=8,
            channels_mlp_dim=64,
            patch_size=2,
            input_shape=(8, 8, 3),
            classes=10,
        ),
        gMLPBackbone(
            vocabulary_size=96,
            num_layers=1,
            hidden_dim=16,
            intermediate_dim=64,
            max_sequence_length=8,
            attention_dim=8,
        ),
    )
    return [v.path for model in models for v in model.weights]


def test_layout_map_shards_as_documented():
    layout_map = get_layout_map(mesh())
    expected = {
        "blocks_0/expand/kernel": (None, "model"),
        "blocks_0/expand/bias": ("model",),
        "blocks_0/output/kernel": ("model", None),
        "blocks_0/output/bias": None,
        "blocks_0/spatial_gating_unit/kernel": None,
        "blocks_0/spatial_gating_unit/bias": None,
        "blocks_0/spatial_gating_unit/norm/gamma": ("model",),
        "blocks_0/spatial_gating_unit/norm/beta": ("model",),
        "blocks_0/norm/gamma": None,
        "blocks_0/token_expand/kernel": (None, "model"),
        "blocks_0/token_output/kernel": ("model", None),
        "blocks_0/channel_expand/bias": ("model",),
        "blocks_0/channel_output/kernel": ("model", None),
        "gmlp_block_3/tiny_attention/qkv/kernel": None,
        "gmlp_block_3/tiny_attention/output/kernel": (None, "model"),
        "gmlp_block_3/tiny_attention/output/bias": ("model",),
        "gmlp_block_3/output/kernel": ("model", None),
        "token_embedding/embeddings": (None, "model"),
        "segment_embedding/embeddings": (None, "model"),
        "stem/projection/kernel": None,
        "predictions/kernel": None,
    }
    for path, axes in expected.items():
        layout = layout_map[path]
        assert (layout.axes if layout else None) == axes, path


def test_every_rule_matches_a_variable_and_no_variable_two_rules():
    paths = model_paths()
    layout_map = get_layout_map(mesh())
    for path in paths:
        layout_map[path]  # raises if two rules match
    for pattern, _ in _RULES:
        assert any(re.fullmatch(pattern, path) for path in paths), pattern


def test_layout_map_custom_axis_names():
    device_mesh = keras.distribution.DeviceMesh(
        (4, 2), ("data", "tensor"), devices=[f"cpu:{i}" for i in range(8)]
    )
    layout_map = get_layout_map(
        device_mesh,
        model_parallel_dim_name="tensor",
        data_parallel_dim_name="data",
    )
    assert layout_map["blocks_0/expand/kernel"].axes == (None, "tensor")
    assert layout_map.device_mesh is device_mesh


def test_backbone_static_method_delegates():
    from keras_gmlp.models import gMLPBackbone

    layout_map = gMLPBackbone.get_layout_map(mesh())
    assert list(layout_map) == list(get_layout_map(mesh()))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"device_mesh": "mesh"}, "device_mesh="),
        ({"model_parallel_dim_name": "tensor"}, "model_parallel_dim_name='tensor'"),
        ({"data_parallel_dim_name": "data"}, "data_parallel_dim_name='data'"),
        ({"data_parallel_dim_name": "model"}, "must differ"),
    ],
)
def test_layout_map_rejects_bad_arguments(kwargs, message):
    kwargs = {"device_mesh": mesh(), **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        get_layout_map(**kwargs)


@pytest.mark.slow
@pytest.mark.multidevice
def test_jax_data_parallel_matches_single_device(jax_results):
    assert jax_results["devices"] == 8
    result = jax_results["data_parallel"]
    assert len(result["single_losses"]) == 3
    assert result["max_loss_diff"] <= 1e-5, result
    assert result["max_weight_diff"] <= 1e-4, result


@pytest.mark.slow
@pytest.mark.multidevice
@pytest.mark.parametrize("model", ["gmlp", "mixer", "backbone"])
def test_jax_model_parallel_shards_as_promised(jax_results, model):
    result = jax_results["model_parallel"][model]
    assert result["layout_mismatches"] == []
    assert result["sharded_variables"] > 0
    assert result["warnings"] == []
    assert result["max_output_diff"] <= 1e-5, result


@pytest.mark.slow
@pytest.mark.multidevice
def test_jax_model_parallel_rules_all_used_and_fit_matches(jax_results):
    assert jax_results["unmatched_rules"] == []
    assert jax_results["model_parallel"]["fit_max_loss_diff"] <= 1e-5


@pytest.mark.slow
@pytest.mark.multidevice
def test_jax_non_dividing_mesh_falls_back_to_replication(jax_results):
    # d_ffn = 36 on a 4-way model axis: the expand kernel (36 columns)
    # still shards; the 18 gate channels and output rows are replicated.
    result = jax_results["fallback"]
    shardings = result["shardings"]
    assert shardings["blocks_0/expand/kernel"] == [None, "model"]
    assert shardings["blocks_0/output/kernel"] == [None, None]
    assert shardings["blocks_0/spatial_gating_unit/norm/gamma"] == [None]
    assert len(result["warnings"]) == 6  # gamma, beta, output kernel x 2
    assert "'blocks_0/output/kernel'" in result["warnings"][2]
    assert "size 18" in result["warnings"][2]
    assert result["max_output_diff"] <= 1e-5
    # Keras' own ModelParallel cannot see shapes in a path lookup; it fails
    # at variable creation, as the module docstring says.
    assert result["keras_model_parallel"] != "ok"


@pytest.mark.slow
@pytest.mark.multidevice
def test_tensorflow_mirrored_strategy_matches_single_device():
    result = run_worker("_tf_worker.py")
    assert result["replicas"] == 2
    assert len(result["mirrored_losses"]) == 3
    assert result["max_loss_diff"] <= 1e-5, result
    assert result["max_weight_diff"] <= 1e-4, result
