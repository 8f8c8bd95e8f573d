import os

import keras
import numpy as np
import pytest

from keras_gmlp.layers import gMLPBlock
from tests import numpy_reference as ref
from tests.layers.helpers import REGULARISATION_CASES
from tests.layers.helpers import assign_block_weights
from tests.layers.helpers import call_with_pinned_seeds
from tests.layers.helpers import outputs_in_training
from tests.layers.helpers import random_block_weights
from tests.layers.helpers import to_numpy

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "amlp_block.npz")


def _block(rng, attention_dim=None, causal=False, length=10, **kwargs):
    block = gMLPBlock(
        8, 12, length, attention_dim=attention_dim, causal=causal, **kwargs
    )
    block.build((None, None, 8))
    w = random_block_weights(rng, 8, 12, length, attention_dim=attention_dim)
    assign_block_weights(block, w)
    return block, w


@pytest.mark.parametrize("attention_dim", [None, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_matches_numpy(rng, attention_dim, causal):
    block, w = _block(rng, attention_dim, causal)
    x = rng.standard_normal((2, 10, 8))
    mask = np.ones((2, 10), bool)
    mask[1, 6:] = False
    got = block(x.astype("float32"), padding_mask=mask)
    want = ref.gmlp_block(x, w, mask=mask, causal=causal)
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)


def test_golden_fixture():
    """An aMLP block written independently in PyTorch from the paper's
    pseudocode (tests/fixtures/make_amlp_fixture.py) produced these outputs;
    every backend must reproduce them."""
    data = np.load(FIXTURE)
    w = {k[2:]: data[k] for k in data.files if k.startswith("w_")}
    block = gMLPBlock(16, 24, 12, attention_dim=8, causal=True)
    block.build((None, None, 16))
    assign_block_weights(block, w)
    got = block(data["inputs"], padding_mask=data["padding_mask"])
    np.testing.assert_allclose(to_numpy(got), data["outputs"], atol=1e-5, rtol=1e-5)


def test_initial_block_is_plain_gated_ffn(rng):
    """W ~ 0 and b = 1 at init, so the block is x + V(u) (the paper's remark).

    The residue is V(u * (W v)) with W ~ N(0, 1e-6), about 1e-6 * sqrt(length)
    relative to the branch, so the branch is compared at 1e-5 of its scale.
    """
    block = gMLPBlock(16, 32, 8)
    x = rng.standard_normal((2, 8, 16)).astype("float32")
    branch = to_numpy(block(x)) - x
    norm = ref.layer_norm(
        x.astype(np.float64),
        to_numpy(block.norm.gamma),
        to_numpy(block.norm.beta),
        1e-6,
    )
    z = ref.gelu(
        norm @ to_numpy(block.expand_dense.kernel) + to_numpy(block.expand_dense.bias)
    )
    u = z[..., :16]
    ffn = u @ to_numpy(block.output_dense.kernel) + to_numpy(block.output_dense.bias)
    scale = max(1.0, np.abs(ffn).max())
    np.testing.assert_allclose(branch, ffn, atol=1e-5 * scale)


@pytest.mark.parametrize("attention_dim", [None, 4])
def test_causal_block_never_looks_ahead(rng, attention_dim):
    block, _ = _block(rng, attention_dim, causal=True, drop_path_rate=0.5, dropout=0.2)
    x = rng.standard_normal((3, 10, 8)).astype("float32")
    changed = x.copy()
    changed[:, 6:] = rng.standard_normal((3, 4, 8))
    for training in (False, True):
        before = to_numpy(call_with_pinned_seeds(block, x, training=training))
        after = to_numpy(call_with_pinned_seeds(block, changed, training=training))
        np.testing.assert_allclose(after[:, :6], before[:, :6], atol=1e-6)
        assert np.abs(after[:, 6:] - before[:, 6:]).max() > 1e-3


@pytest.mark.parametrize("attention_dim", [None, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_padding_does_not_change_real_tokens(rng, attention_dim, causal):
    block, _ = _block(rng, attention_dim, causal, length=16)
    real = rng.standard_normal((1, 7, 8)).astype("float32")
    unpadded = to_numpy(block(real))
    for padded_length in (9, 16):
        garbage = rng.standard_normal((1, padded_length - 7, 8)).astype("float32")
        padded = np.concatenate([real, garbage], axis=1)
        mask = np.arange(padded_length)[None] < 7
        out = to_numpy(block(padded, padding_mask=mask))
        np.testing.assert_allclose(out[:, :7], unpadded, atol=1e-5)


def test_keras_save_load_identity(rng, tmp_path):
    tokens = keras.Input((None, 8))
    mask = keras.Input((None,), dtype="bool")
    x = gMLPBlock(8, 12, 10, attention_dim=4, causal=True, drop_path_rate=0.1)(
        tokens, padding_mask=mask
    )
    model = keras.Model([tokens, mask], x)
    assign_block_weights(model.layers[2], random_block_weights(rng, 8, 12, 10, 4))
    data = [rng.standard_normal((2, 10, 8)).astype("float32"), np.ones((2, 10), bool)]
    path = str(tmp_path / "block.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(restored.predict(data, verbose=0)),
        keras.ops.convert_to_numpy(model.predict(data, verbose=0)),
    )


def test_config_round_trip():
    block = gMLPBlock(
        32,
        64,
        16,
        attention_dim=8,
        causal=True,
        num_heads=2,
        drop_path_rate=0.1,
        dropout=0.1,
        layer_norm_epsilon=1e-5,
        name="b0",
    )
    clone = gMLPBlock.from_config(block.get_config())
    assert clone.get_config() == block.get_config()


def test_mixed_bfloat16(rng):
    block = gMLPBlock(8, 12, 10, attention_dim=4, dtype="mixed_bfloat16")
    out = block(rng.standard_normal((2, 10, 8)).astype("float32"))
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(v.dtype == "float32" for v in block.weights)
    assert np.isfinite(to_numpy(out)).all()


def test_fit_step_reaches_spatial_weights(rng):
    inputs = keras.Input((10, 8))
    model = keras.Model(inputs, gMLPBlock(8, 12, 10)(inputs))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    sgu = model.layers[1].spatial_gating_unit
    before = [to_numpy(sgu.kernel), to_numpy(sgu.bias)]
    model.fit(
        rng.standard_normal((4, 10, 8)).astype("float32"),
        rng.standard_normal((4, 10, 8)).astype("float32"),
        epochs=1,
        batch_size=4,
        verbose=0,
    )
    for old, variable in zip(before, (sgu.kernel, sgu.bias)):
        assert np.abs(to_numpy(variable) - old).max() > 1e-4


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"intermediate_dim": 13}, "intermediate_dim"),
        ({"num_heads": 4}, "num_heads"),
        ({"drop_path_rate": -0.1}, "drop_path_rate"),
        ({"dropout": 1.5}, "dropout"),
        ({"attention_dim": 0}, "attention_dim"),
        ({"sequence_length": -1}, "sequence_length"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = {"hidden_dim": 8, "intermediate_dim": 12, "sequence_length": 10}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        gMLPBlock(**arguments)


def test_bad_inputs():
    with pytest.raises(ValueError, match="hidden_dim=8"):
        gMLPBlock(8, 12, 10)(np.zeros((1, 10, 6), "float32"))
    with pytest.raises(ValueError, match="rank 3"):
        gMLPBlock(8, 12, 10)(np.zeros((10, 8), "float32"))
    with pytest.raises(ValueError, match="sequence_length=10"):
        gMLPBlock(8, 12, 10)(np.zeros((1, 11, 8), "float32"))


@pytest.mark.parametrize("attention_dim", [None, 4])
def test_cached_decoding_equals_full_causal_pass(rng, attention_dim):
    """Prefill a prompt into the cache, then feed one token at a time: every
    output equals the uncached causal pass over the whole sequence."""
    block, _ = _block(rng, attention_dim, causal=True, length=12)
    x = rng.standard_normal((2, 9, 8)).astype("float32")
    full = to_numpy(block(x))
    cache = block.initial_cache(batch_size=2, cache_length=10)
    outputs, cache = block(x[:, :4], cache=cache, cache_update_index=0)
    steps = [to_numpy(outputs)]
    for index in range(4, 9):
        outputs, cache = block(
            x[:, index : index + 1], cache=cache, cache_update_index=index
        )
        steps.append(to_numpy(outputs))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


def test_cache_requires_causal_block(rng):
    block = gMLPBlock(8, 12, 10)
    with pytest.raises(ValueError, match="causal"):
        block(
            np.zeros((1, 1, 8), "float32"),
            cache=block.initial_cache(1, 10),
            cache_update_index=0,
        )


@pytest.mark.parametrize("rates, regularised", REGULARISATION_CASES)
def test_dropout_and_stochastic_depth_act_only_in_training(rng, rates, regularised):
    block, _ = _block(rng, **rates)
    x = rng.standard_normal((16, 10, 8)).astype("float32")
    training = outputs_in_training(block, x, regularised)
    if "drop_path_rate" in rates:
        # A dropped sample's branch is zero: its output is its input.
        dropped = np.all(training == x, axis=(1, 2))
        assert 0 < dropped.sum() < len(x)
