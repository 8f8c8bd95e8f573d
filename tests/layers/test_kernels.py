"""Every backend- and device-specific kernel, forced on this CPU in each form,
equals its plain form and the numpy formula, with every weight random."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import gMLPBlock
from keras_gmlp.layers._kernels import KERNEL_NAMES
from keras_gmlp.layers._kernels import gelu
from keras_gmlp.layers._kernels import spatial_projection
from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.layers._kernels import uses_fast_form
from keras_gmlp.layers._layer_normalization import LastAxisLayerNormalization
from tests import numpy_reference as ref
from tests.layers.helpers import to_numpy

FORCED = ["fast", "plain"]

# float32 round-off of values of order 1-10 summed over a few dozen terms.
ROUND_OFF = {"rtol": 1e-5, "atol": 1e-5}


def randomise_every_weight(layer, rng):
    """Draws every trainable weight, biases and norms included, at random:
    the spatial bias starts at ones and the spatial kernel near zero, and
    equal values would hide an indexing bug."""
    for variable in layer.trainable_weights:
        variable.assign(0.5 * rng.standard_normal(variable.shape))


def outputs_in_each_form(function):
    """`function()` under every forced form, as float64 numpy values."""
    results = {}
    for choice in FORCED:
        with use_kernels(choice):
            results[choice] = keras.tree.map_structure(to_numpy, function())
    return results


def assert_forms_agree(results, expected=None):
    fast, plain = (
        keras.tree.flatten(results["fast"]),
        keras.tree.flatten(results["plain"]),
    )
    for fast_value, plain_value in zip(fast, plain):
        np.testing.assert_allclose(fast_value, plain_value, **ROUND_OFF)
    if expected is not None:
        for choice in FORCED:
            np.testing.assert_allclose(results[choice], expected, **ROUND_OFF)


def test_forcing_picks_every_form():
    torch = keras.backend.backend() == "torch"
    with use_kernels("fast"):
        chosen = {name: uses_fast_form(name) for name in KERNEL_NAMES}
    # The raw-torch decoding step cannot run on another backend.
    assert chosen == {name: name != "torch_decoding" or torch for name in KERNEL_NAMES}
    with use_kernels("plain"):
        assert not any(uses_fast_form(name) for name in KERNEL_NAMES)


def test_accelerator_choice_takes_the_forms_off_a_cpu():
    """`use_kernels("accelerator")`: what "auto" picks on a GPU, here on a
    CPU (the GPU census of benchmarks/hlo_census.py): JAX every fast form
    (measured faster on an H200 too); elsewhere the einsum projection,
    Keras' LayerNorm, exact GELU but on TensorFlow, the rank-2 matmul on
    TensorFlow and PyTorch's decoding step."""
    backend = keras.backend.backend()
    jax = backend == "jax"
    with use_kernels("accelerator"):
        chosen = {name: uses_fast_form(name) for name in KERNEL_NAMES}
    assert chosen == {
        "spatial_projection": jax,
        "gelu": backend != "torch",
        "layer_norm": jax,
        "rank2_dense": backend != "torch",
        "torch_decoding": backend == "torch",
    }


def test_automatic_choice_on_this_cpu():
    """What benchmarks/docs/throughput.md measured: XLA CPUs take the matmul form of
    the spatial projection (PyTorch on CPUs its one-head form), JAX CPUs
    the leaner GELU and LayerNorm, TensorFlow the ONNX-loadable GELU,
    PyTorch its decoding step, and the XLA backends the rank-2 matmul of
    the channel projections."""
    backend = keras.backend.backend()
    expected = {
        "tensorflow": {"gelu", "rank2_dense", "spatial_projection"},
        "jax": {"gelu", "layer_norm", "rank2_dense", "spatial_projection"},
        "torch": {"spatial_projection", "torch_decoding"},
    }[backend]
    chosen = {name for name in KERNEL_NAMES if uses_fast_form(name)}
    assert chosen == expected
    with use_kernels("auto"):
        assert {name for name in KERNEL_NAMES if uses_fast_form(name)} == expected


def test_choice_is_restored_after_an_error():
    before = {name: uses_fast_form(name) for name in KERNEL_NAMES}
    with pytest.raises(RuntimeError), use_kernels("plain"):
        raise RuntimeError
    assert {name: uses_fast_form(name) for name in KERNEL_NAMES} == before


def test_unknown_choices_are_refused():
    with pytest.raises(ValueError, match="choice='quick'"), use_kernels("quick"):
        pass
    with pytest.raises(ValueError, match="name='softmax'"):
        uses_fast_form("softmax")


def test_gelu_is_the_exact_erf_formula(rng):
    x = (rng.standard_normal((64, 33)) * 4).astype("float32")
    results = outputs_in_each_form(lambda: gelu(keras.ops.convert_to_tensor(x)))
    expected = ref.gelu(x.astype("float64"))
    for choice in FORCED:
        np.testing.assert_allclose(results[choice], expected, atol=2e-6)


@pytest.mark.parametrize("choice", FORCED)
def test_gelu_gradient_matches_the_formula(rng, choice):
    x = (rng.standard_normal((5, 7)) * 3).astype("float32")
    # d/dx 0.5 x (1 + erf(x / sqrt 2)) = Phi(x) + x phi(x).
    x64 = x.astype("float64")
    expected = 0.5 * (1 + ref._erf(x64 / np.sqrt(2))) + x64 * np.exp(
        -(x64**2) / 2
    ) / np.sqrt(2 * np.pi)
    with use_kernels(choice):
        gradient = gradient_of_sum(gelu, x)
    np.testing.assert_allclose(gradient, expected, atol=1e-5)


def gradient_of_sum(function, x):
    """d sum(function(x)) / dx on the active backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda v: function(v).sum())(x))
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(v)
            total = tf.reduce_sum(function(v))
        return tape.gradient(total, v).numpy()
    import torch

    v = torch.tensor(x, requires_grad=True)
    function(v).sum().backward()
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
    expected = to_numpy(theirs(x))
    for choice in FORCED:
        with use_kernels(choice):
            out = ours(x)
        assert keras.backend.standardize_dtype(out.dtype) == (
            "float32" if policy == "float32" else "bfloat16"
        )
        atol = 1e-5 if policy == "float32" else 5e-2
        np.testing.assert_allclose(to_numpy(out), expected, atol=atol)
        if policy == "float32":
            formula = ref.layer_norm(x.astype("float64"), gamma, beta, 1e-5)
            np.testing.assert_allclose(to_numpy(out), formula, atol=1e-5)


@pytest.mark.parametrize("heads", [1, 3])
def test_spatial_projection_is_the_token_contraction(rng, heads):
    batch, rows, columns, head_dim = 2, 5, 7, 4
    kernel = rng.standard_normal((heads, rows, columns)).astype("float32")
    bias = rng.standard_normal((heads, rows)).astype("float32")
    context = rng.standard_normal((batch, columns, heads * head_dim)).astype("float32")
    expected = np.zeros((batch, rows, heads, head_dim))
    for b in range(batch):
        for h in range(heads):
            head = context[b, :, h * head_dim : (h + 1) * head_dim]
            expected[b, :, h] = kernel[h].astype("float64") @ head + bias[h, :, None]
    results = outputs_in_each_form(
        lambda: spatial_projection(kernel, bias, context, batch, rows, columns)
    )
    assert_forms_agree(results, expected.reshape(batch, rows, heads * head_dim))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [1, 2])
def test_spatial_gating_unit_in_each_form(rng, causal, heads):
    x = rng.standard_normal((3, 8, 12)).astype("float32")
    mask = np.arange(8)[None, :] < np.array([[8], [5], [2]])
    unit = SpatialGatingUnit(8, causal=causal, num_heads=heads)
    unit.build(x.shape)
    randomise_every_weight(unit, rng)
    results = outputs_in_each_form(lambda: unit(x, padding_mask=mask))
    expected = ref.spatial_gating_unit(
        x.astype("float64"),
        to_numpy(unit.kernel),
        to_numpy(unit.bias),
        to_numpy(unit.norm.gamma),
        to_numpy(unit.norm.beta),
        mask=mask,
        causal=causal,
    )
    real = mask[:, :, None]
    assert_forms_agree(
        {choice: value * real for choice, value in results.items()}, expected * real
    )


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_gmlp_block_in_each_form(rng, attention_dim):
    x = rng.standard_normal((2, 10, 16)).astype("float32")
    mask = np.arange(10)[None, :] < np.array([[10], [6]])
    block = gMLPBlock(16, 32, 10, attention_dim=attention_dim, causal=True)
    block.build(x.shape)
    randomise_every_weight(block, rng)
    assert_forms_agree(outputs_in_each_form(lambda: block(x, padding_mask=mask)))
    results = outputs_in_each_form(
        lambda: gradient_of_sum(lambda v: block(v, padding_mask=mask), x)
    )
    assert_forms_agree(results)


@pytest.mark.parametrize("attention_dim", [None, 8])
def test_cached_gmlp_block_in_each_form(rng, attention_dim):
    """Prefill 4 tokens into the decoding cache, then one step at index 4."""
    x = rng.standard_normal((2, 5, 16)).astype("float32")
    block = gMLPBlock(16, 32, 8, attention_dim=attention_dim, causal=True)
    block.build(x.shape)
    randomise_every_weight(block, rng)

    def decode():
        cache = block.initial_cache(2, 8)
        prefix, cache = block(x[:, :4], cache=cache, cache_update_index=0)
        step, cache = block(x[:, 4:], cache=cache, cache_update_index=4)
        return prefix, step, cache

    results = outputs_in_each_form(decode)
    assert_forms_agree(results)
    uncached = to_numpy(block(x))
    np.testing.assert_allclose(results["plain"][1][:, 0], uncached[:, 4], **ROUND_OFF)


def test_mixer_block_in_each_form(rng):
    x = rng.standard_normal((2, 9, 12)).astype("float32")
    block = MixerBlock(12, 6, 24, 9)
    block.build(x.shape)
    randomise_every_weight(block, rng)
    assert_forms_agree(outputs_in_each_form(lambda: block(x)))
    assert_forms_agree(outputs_in_each_form(lambda: gradient_of_sum(block, x)))


def test_layer_norm_refuses_other_axes():
    with pytest.raises(ValueError, match="axis=1"):
        LastAxisLayerNormalization(axis=1)


def test_layer_norm_config_round_trip():
    layer = LastAxisLayerNormalization(epsilon=1e-5)
    layer.build((2, 3, 4))
    restored = LastAxisLayerNormalization.from_config(layer.get_config())
    assert restored.epsilon == 1e-5


def test_saved_files_do_not_name_the_layer_norm_subclass(tmp_path):
    """The subclass is a speed detail: saved configs must not depend on it,
    and a file that names it (a future one, or a hand-made one) still loads."""
    import zipfile

    from keras_gmlp.applications import gMLPTi
    from keras_gmlp.models import gMLPBackbone

    backbone = gMLPBackbone(
        vocabulary_size=20,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
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
