"""The library's leaner GELU and LayerNormalization equal the formulas."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers._layer_normalization import LastAxisLayerNormalization
from keras_gmlp.layers._ops import gelu
from tests import numpy_reference as ref
from tests.layers.helpers import to_numpy


def test_gelu_is_the_exact_erf_formula(rng):
    x = (rng.standard_normal((64, 33)) * 4).astype("float32")
    np.testing.assert_allclose(to_numpy(gelu(x)), ref.gelu(x.astype("float64")), atol=2e-6)


def test_gelu_gradient_matches_the_formula(rng):
    x = (rng.standard_normal((5, 7)) * 3).astype("float32")
    # d/dx 0.5 x (1 + erf(x / sqrt 2)) = Phi(x) + x phi(x).
    x64 = x.astype("float64")
    expected = 0.5 * (1 + ref._erf(x64 / np.sqrt(2))) + x64 * np.exp(
        -(x64**2) / 2
    ) / np.sqrt(2 * np.pi)
    inputs = keras.Input((7,))
    model = keras.Model(inputs, keras.layers.Lambda(gelu)(inputs))
    gradient = gradient_of_sum(model, x)
    np.testing.assert_allclose(gradient, expected, atol=1e-5)


def gradient_of_sum(model, x):
    """d sum(model(x)) / dx on the active backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda v: model(v).sum())(x))
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(v)
            total = tf.reduce_sum(model(v))
        return tape.gradient(total, v).numpy()
    import torch

    v = torch.tensor(x, requires_grad=True)
    model(v).sum().backward()
    return v.grad.numpy()


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_layer_norm_equals_keras_layer_norm(rng, policy):
    x = (rng.standard_normal((3, 11, 24)) * 5 + 2).astype("float32")
    ours = LastAxisLayerNormalization(epsilon=1e-5, dtype=policy)
    theirs = keras.layers.LayerNormalization(epsilon=1e-5, dtype=policy)
    ours.build(x.shape)
    theirs.build(x.shape)
    gamma = rng.standard_normal(24).astype("float32")
    beta = rng.standard_normal(24).astype("float32")
    for layer in (ours, theirs):
        layer.set_weights([gamma, beta])
    out, expected = ours(x), theirs(x)
    assert keras.backend.standardize_dtype(out.dtype) == (
        "float32" if policy == "float32" else "bfloat16"
    )
    atol = 1e-5 if policy == "float32" else 5e-2
    np.testing.assert_allclose(
        to_numpy(keras.ops.cast(out, "float32")),
        to_numpy(keras.ops.cast(expected, "float32")),
        atol=atol,
    )
    if policy == "float32":
        formula = ref.layer_norm(x.astype("float64"), gamma, beta, 1e-5)
        np.testing.assert_allclose(to_numpy(out), formula, atol=1e-5)


def test_layer_norm_refuses_other_axes():
    with pytest.raises(ValueError, match="axis=1"):
        LastAxisLayerNormalization(axis=1)


def test_layer_norm_config_round_trip():
    layer = LastAxisLayerNormalization(epsilon=1e-5)
    layer.build((2, 3, 4))
    restored = LastAxisLayerNormalization.from_config(layer.get_config())
    assert restored.epsilon == 1e-5


def test_cpu_only_formulas_give_way_to_keras_elsewhere(rng, monkeypatch):
    """Off CPUs (simulated) the layers use Keras' GELU, LayerNorm and the
    SGU's einsum, and compute the same values as the CPU formulas."""
    from keras_gmlp.layers import SpatialGatingUnit
    from keras_gmlp.layers import _ops

    x = (rng.standard_normal((2, 6, 8)) * 2).astype("float32")
    norm = LastAxisLayerNormalization(epsilon=1e-6)
    unit = SpatialGatingUnit(6, causal=True, kernel_initializer="glorot_uniform")
    on_cpu = [to_numpy(gelu(x)), to_numpy(norm(x)), to_numpy(unit(x))]
    assert _ops.xla_on_cpu() == (keras.backend.backend() != "torch")
    monkeypatch.setattr(_ops.keras.distribution, "list_devices", lambda: ["gpu:0"])
    _ops.xla_on_cpu.cache_clear()
    try:
        assert not _ops.xla_on_cpu()
        elsewhere = [to_numpy(gelu(x)), to_numpy(norm(x)), to_numpy(unit(x))]
    finally:
        _ops.xla_on_cpu.cache_clear()
    for cpu_value, other_value in zip(on_cpu, elsewhere):
        np.testing.assert_allclose(other_value, cpu_value, atol=1e-5)


def test_saved_files_do_not_name_the_layer_norm_subclass(tmp_path):
    """The subclass is a speed detail: saved configs must not depend on it,
    and a file that names it (a future one, or a hand-made one) still loads."""
    import zipfile

    from keras_gmlp.applications import gMLPTi
    from keras_gmlp.models import gMLPBackbone

    backbone = gMLPBackbone(
        vocabulary_size=20, num_layers=1, hidden_dim=8, intermediate_dim=16,
        max_sequence_length=8,
    )
    classifier = gMLPTi(weights=None, input_shape=(32, 32, 3), classes=3)
    for name, model in (("text", backbone), ("image", classifier)):
        path = tmp_path / f"{name}.keras"
        model.save(path)
        config = zipfile.ZipFile(path).read("config.json").decode()
        assert "LastAxisLayerNormalization" not in config
    layer = keras.saving.deserialize_keras_object(
        {
            "module": "keras_gmlp.layers._layer_normalization",
            "class_name": "LastAxisLayerNormalization",
            "registered_name": "keras_gmlp>LastAxisLayerNormalization",
            "config": {"axis": [-1], "epsilon": 1e-6, "name": "norm"},
        }
    )
    assert isinstance(layer, keras.layers.LayerNormalization)
    assert layer.epsilon == 1e-6
