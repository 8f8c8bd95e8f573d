"""The gating ablations through `gMLPBackbone`, its tasks and the builders:
saved and reloaded as presets, generated from, and the default unchanged."""

import keras
import numpy as np

from keras_gmlp import applications
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM


def _backbone(gating, causal=False):
    return gMLPBackbone(
        vocabulary_size=30,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=12,
        max_sequence_length=8,
        causal=causal,
        dropout=0.0,
        gating=gating,
    )


def _inputs():
    return {
        "token_ids": np.array([[2, 7, 9, 3, 0, 0, 0, 0]], "int32"),
        "segment_ids": np.zeros((1, 8), "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0, 0, 0, 0]], "int32"),
    }


def test_preset_round_trip_keeps_the_gating(tmp_path):
    backbone = _backbone("multiplicative")
    rng = np.random.default_rng(0)
    for weight in backbone.weights:
        weight.assign(0.3 * rng.standard_normal(weight.shape))
    backbone.save_to_preset(str(tmp_path / "preset"))
    restored = gMLPBackbone.from_preset(str(tmp_path / "preset"))
    assert restored.gating == "multiplicative"
    assert restored.gmlp_blocks[1].spatial_gating_unit.gating == "multiplicative"
    got, want = (model(_inputs())["sequence_output"] for model in (restored, backbone))
    np.testing.assert_array_equal(*map(keras.ops.convert_to_numpy, (got, want)))


def test_ablations_gate_all_of_d_ffn():
    """The output projection reads d_ffn channels instead of d_ffn / 2, and
    the gate's norm covers them: (12 - 6) * 8 + 2 * (12 - 6) more weights
    per block."""
    split, linear = _backbone("split"), _backbone("linear")
    assert "gating" in split.get_config() and split.get_config()["gating"] == "split"
    assert linear.count_params() - split.count_params() == 2 * (6 * 8 + 2 * 6)


def test_causal_lm_with_an_ablation_generates_as_uncached_greedy():
    """Greedy generation (cached, and on PyTorch not through the raw
    decoder, which computes the split gating only) picks each token as the
    argmax of a full causal pass."""
    causal_lm = gMLPCausalLM(_backbone("additive", causal=True))
    rng = np.random.default_rng(1)
    for weight in causal_lm.backbone.weights:
        weight.assign(0.5 * rng.standard_normal(weight.shape))
    causal_lm.compile(sampler="greedy")
    prompt = {
        "token_ids": np.array([[2, 7, 9, 0, 0, 0, 0, 0]], "int32"),
        "padding_mask": np.array([[1, 1, 1, 0, 0, 0, 0, 0]], bool),
    }
    generated = causal_lm.generate(prompt, stop_token_ids=None)["token_ids"]
    tokens = [2, 7, 9]
    for _ in range(5):
        ids = np.array([tokens + [0] * (8 - len(tokens))], "int32")
        inputs = {"token_ids": ids, "padding_mask": ids > -1}
        logits = keras.ops.convert_to_numpy(causal_lm(inputs))
        tokens.append(int(np.argmax(logits[0, len(tokens) - 1])))
    np.testing.assert_array_equal(np.asarray(generated)[0], tokens)


def test_builders_pass_the_gating_through():
    encoder = applications.gMLPBase(
        include_top=False, vocabulary_size=50, sequence_length=8, gating="additive"
    )
    assert {b.spatial_gating_unit.gating for b in encoder.gmlp_blocks} == {"additive"}
    image_model = applications.gmlp.gMLP(
        2, 16, 24, patch_size=4, input_shape=(8, 8, 3), classes=3, gating="linear"
    )
    gatings = {
        layer.spatial_gating_unit.gating
        for layer in image_model.layers
        if hasattr(layer, "spatial_gating_unit")
    }
    assert gatings == {"linear"}
