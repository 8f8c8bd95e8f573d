"""Which sublayer calls skip Keras' `Layer.__call__` (`_ops.call_sublayer`):
on PyTorch only, and only where `__call__` would add nothing; the values
are those of the calls through `__call__` either way."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import StochasticDepth
from keras_gmlp.layers import TinyAttention
from keras_gmlp.layers import _ops
from keras_gmlp.layers import gMLPBlock
from tests.layers.helpers import to_numpy

TORCH = keras.backend.backend() == "torch"


@pytest.fixture
def keras_calls(monkeypatch):
    """The blocks' sublayers whose `__call__` runs, in call order."""
    names = []
    for cls in (
        keras.layers.Dense,
        keras.layers.LayerNormalization,
        keras.layers.Dropout,
        StochasticDepth,
        SpatialGatingUnit,
        TinyAttention,
    ):
        original = cls.__call__

        def counted(self, *args, _original=original, **kwargs):
            names.append(self)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", counted)
    return names


def _through_keras_call(block, x, monkeypatch):
    """`block(x)` with every sublayer called through `__call__`."""
    with monkeypatch.context() as patch:
        patch.setattr(_ops, "_reads_variables_as_call_would", lambda layer: False)
        return to_numpy(block(x))


def _gmlp_block(dtype=None):
    # With tiny attention: an aMLP block has every kind of sublayer.
    block = gMLPBlock(8, 16, 6, attention_dim=4, dtype=dtype)
    block.build((None, 6, 8))
    return block


def _inputs():
    return np.random.default_rng(0).standard_normal((2, 6, 8)).astype("float32")


def test_float32_block_calls_its_sublayers_directly_on_torch(keras_calls, monkeypatch):
    block, x = _gmlp_block(), _inputs()
    expected = _through_keras_call(block, x, monkeypatch)
    keras_calls.clear()
    np.testing.assert_array_equal(to_numpy(block(x)), expected)
    unit, attention = block.spatial_gating_unit, block.tiny_attention
    sublayers = {
        block.norm.path,
        block.expand_dense.path,
        block.output_dense.path,
        unit.path,
        unit.norm.path,
        attention.path,
        attention.qkv_dense.path,
        attention.output_dense.path,
    }
    called = {layer.path for layer in keras_calls}
    assert called == (set() if TORCH else sublayers)


def test_mixed_precision_keeps_the_norms_on_keras_call(keras_calls, monkeypatch):
    """Under a mixed policy the block's `__call__` opens a bfloat16
    autocast scope. Keras' LayerNormalization is not autocast (it reads its
    float32 weights as they are), so its `__call__`, which would close that
    scope, runs; the `Dense` layers read theirs in the block's scope."""
    block, x = _gmlp_block("mixed_bfloat16"), _inputs()
    expected = _through_keras_call(block, x, monkeypatch)
    keras_calls.clear()
    np.testing.assert_array_equal(to_numpy(block(x)), expected)
    called = {layer.path for layer in keras_calls}
    norms = {block.norm.path, block.spatial_gating_unit.norm.path}
    if TORCH:
        assert called == norms
    else:
        assert (
            norms | {block.spatial_gating_unit.path, block.expand_dense.path} <= called
        )


def test_quantized_and_rematerialised_sublayers_take_keras_call(
    keras_calls, monkeypatch
):
    quantized = _gmlp_block()
    # What `Model.quantize` does to a block's `Dense` layers.
    quantized.expand_dense.quantize("int8")
    quantized.output_dense.quantize("int8")
    with keras.RematScope(mode="full"):
        rematerialised = _gmlp_block()
    for block in (quantized, rematerialised):
        keras_calls.clear()
        block(_inputs())
        assert block.expand_dense in keras_calls
        assert block.output_dense in keras_calls


def test_mixer_block_values_equal_keras_calls(keras_calls, monkeypatch):
    block = MixerBlock(8, 12, 16, 6)
    block.build((None, 6, 8))
    x = _inputs()
    expected = _through_keras_call(block, x, monkeypatch)
    keras_calls.clear()
    np.testing.assert_array_equal(to_numpy(block(x)), expected)
    assert (not keras_calls) == TORCH


def test_training_calls_dropout_and_drop_path_directly_on_torch(
    keras_calls, monkeypatch
):
    """In training, the block's `Dropout` and `StochasticDepth` skip
    `__call__` on PyTorch as its other sublayers do, with the same draws:
    two blocks made after the same global seed drop the same units."""
    x = np.random.default_rng(0).standard_normal((64, 6, 8)).astype("float32")
    outputs, called = [], []
    for through_keras_call in (True, False):
        keras.utils.set_random_seed(3)
        block = gMLPBlock(8, 16, 6, dropout=0.5, drop_path_rate=0.5)
        block.build((None, 6, 8))
        keras_calls.clear()
        with monkeypatch.context() as patch:
            if through_keras_call:
                patch.setattr(
                    _ops, "_reads_variables_as_call_would", lambda layer: False
                )
            outputs.append(to_numpy(block(x, training=True)))
        called.append([type(layer).__name__ for layer in keras_calls])
    np.testing.assert_array_equal(outputs[1], outputs[0])
    # Some samples' branches dropped, some kept: the draws ran.
    assert 0 < np.mean(np.all(outputs[0] == x, axis=(1, 2))) < 1
    drops = {"Dropout", "StochasticDepth"}
    assert drops <= set(called[0])
    assert drops & set(called[1]) == (set() if TORCH else drops)
