"""The spatial gating unit's forms of the paper's gating ablation (Table 3):
split Z1 * f(Z2) (the default), multiplicative Z * f(Z), additive Z + f(Z)
and linear f(Z), with f(Z) = W norm(Z) + b over the tokens. Each is checked
against the numpy formula, with padding, causality, tiny attention, cached
decoding and serialisation, in the unit, the block and the backbone."""

import keras
import numpy as np
import pytest

from keras_gmlp.layers import SpatialGatingUnit
from keras_gmlp.layers import gMLPBlock
from tests import numpy_reference as ref
from tests.layers.helpers import assign_block_weights
from tests.layers.helpers import assign_sgu_weights
from tests.layers.helpers import random_block_weights
from tests.layers.helpers import to_numpy

GATINGS = ["split", "multiplicative", "additive", "linear"]
ABLATIONS = GATINGS[1:]


def _gated(gating, channels):
    return channels // 2 if gating == "split" else channels


# Bidirectional here; the block test below is causal.
@pytest.mark.parametrize("gating", GATINGS)
def test_unit_matches_the_papers_formula(rng, gating, causal=False):
    channels, length = 8, 6
    gated = _gated(gating, channels)
    sgu = SpatialGatingUnit(length, gating=gating, causal=causal, num_heads=2)
    sgu.build((None, None, channels))
    w = random_block_weights(rng, 4, channels, length, heads=2, gated=gated)
    assign_sgu_weights(sgu, w)
    z = rng.standard_normal((2, length, channels))
    mask = np.ones((2, length), bool)
    mask[1, 4:] = False
    attention_output = rng.standard_normal((2, length, gated))
    got = sgu(
        z.astype("float32"),
        padding_mask=mask,
        attention_output=attention_output.astype("float32"),
    )
    want = ref.spatial_gating_unit(
        z, w["W"], w["b"], w["sgu_gamma"], w["sgu_beta"], 1e-5,
        mask=mask, causal=causal, attention_output=attention_output, gating=gating,
    )  # fmt: skip
    assert tuple(got.shape) == (2, length, gated)
    np.testing.assert_allclose(to_numpy(got), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("gating", GATINGS)
def test_each_form_starts_close_to_passing_its_input(rng, gating):
    """A fresh unit passes Z1 (split), Z (multiplicative, additive) or
    norm(Z) (linear) through, so a fresh block starts as a plain FFN."""
    z = rng.standard_normal((2, 5, 6)).astype("float32")
    got = to_numpy(SpatialGatingUnit(5, gating=gating)(z))
    want = {
        "split": z[..., :3],
        "multiplicative": z,
        "additive": z,
        "linear": ref.layer_norm(z, np.ones(6), np.zeros(6), 1e-5),
    }[gating]
    np.testing.assert_allclose(got, want, atol=1e-4)


@pytest.mark.parametrize("gating", ABLATIONS)
def test_block_matches_numpy_with_tiny_attention_and_padding(rng, gating):
    hidden, intermediate, length = 8, 12, 6
    block = gMLPBlock(
        hidden, intermediate, length, attention_dim=4, causal=True, gating=gating
    )
    block.build((None, length, hidden))
    w = random_block_weights(
        rng, hidden, intermediate, length, attention_dim=4, gated=intermediate
    )
    assign_block_weights(block, w)
    x = rng.standard_normal((2, length, hidden))
    mask = np.ones((2, length), bool)
    mask[0, 3:] = False
    got = to_numpy(block(x.astype("float32"), padding_mask=mask))
    want = ref.gmlp_block(x, w, mask=mask, causal=True, gating=gating)
    # Real tokens only: a padded token's own output is never read.
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("gating", ABLATIONS)
def test_padding_does_not_change_real_tokens(rng, gating):
    block = gMLPBlock(8, 16, 10, gating=gating)
    x = rng.standard_normal((1, 10, 8)).astype("float32")
    mask = np.arange(10)[None] < 6
    noisy = x.copy()
    noisy[:, 6:] = 1e3 * rng.standard_normal((1, 4, 8))
    first = to_numpy(block(x, padding_mask=mask))[:, :6]
    second = to_numpy(block(noisy, padding_mask=mask))[:, :6]
    np.testing.assert_allclose(first, second, atol=1e-5)


@pytest.mark.parametrize("gating", ABLATIONS)
def test_cached_decoding_equals_the_full_causal_pass(rng, gating):
    block = gMLPBlock(8, 12, 5, attention_dim=4, causal=True, gating=gating)
    x = rng.standard_normal((2, 5, 8)).astype("float32")
    full = to_numpy(block(x))
    cache = block.initial_cache(2, 5)
    assert tuple(cache[0].shape) == (2, 5, 12)
    steps = []
    for index in range(5):
        step, cache = block(
            x[:, index : index + 1], cache=cache, cache_update_index=index
        )
        steps.append(to_numpy(step))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)
    # Causal: the first tokens do not see a changed last token.
    changed = x.copy()
    changed[:, -1] += 1.0
    np.testing.assert_allclose(
        to_numpy(block(changed))[:, :-1], full[:, :-1], atol=1e-6
    )


def test_unknown_gating_lists_the_allowed_ones():
    for build in (
        lambda: SpatialGatingUnit(4, gating="gated"),
        lambda: gMLPBlock(8, 16, 4, gating="gated"),
    ):
        with pytest.raises(ValueError, match="`gating`") as error:
            build()
        message = str(error.value)
        assert "'gated'" in message
        assert all(repr(gating) in message for gating in GATINGS)


def test_odd_intermediate_dim_only_matters_when_splitting():
    with pytest.raises(ValueError, match="intermediate_dim"):
        gMLPBlock(8, 15, 4)
    block = gMLPBlock(8, 15, 4, gating="additive")
    assert tuple(block(np.zeros((1, 4, 8), "float32")).shape) == (1, 4, 8)
    assert block.output_dense.kernel.shape == (15, 8)


@pytest.mark.parametrize("gating", ABLATIONS)
def test_config_and_keras_file_round_trip(rng, gating, tmp_path):
    inputs = keras.Input((6, 8))
    outputs = gMLPBlock(8, 12, 6, gating=gating)(inputs)
    model = keras.Model(inputs, outputs)
    for weight in model.weights:
        weight.assign(rng.standard_normal(weight.shape) * 0.3 + 0.1)
    path = tmp_path / "block.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.layers[1].spatial_gating_unit.gating == gating
    assert restored.layers[1].get_config()["gating"] == gating
    x = rng.standard_normal((2, 6, 8)).astype("float32")
    np.testing.assert_array_equal(to_numpy(restored(x)), to_numpy(model(x)))
