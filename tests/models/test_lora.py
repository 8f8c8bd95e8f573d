"""LoRA on the backbones, the keras-hub way (`backbone.enable_lora(rank)`):
the channel projections are adapted, only the LoRA factors and the adapted
layers' biases (and a task's head) train, the LoRA weights round-trip, and
names that match nothing are refused before anything is frozen."""

import keras
import numpy as np
import pytest

from keras_gmlp.models import gMLPTextClassifier
from tests.models.gmlp.test_robustness import tiny_backbone
from tests.models.image.conftest import family_classes
from tests.models.image.conftest import small_backbone_kwargs


def text_backbone(attention_dim=None):
    return tiny_backbone(attention_dim=attention_dim)


def image_backbone(family):
    return family_classes(family)["backbone"](**small_backbone_kwargs(family))


# Each backbone, its adapted layers' names and how many per block (aMLP's
# tiny attention has its own "output" projection).
BACKBONES = {
    "gmlp_text": (text_backbone, ["expand", "output"], 2),
    "amlp_text": (lambda: text_backbone(4), ["expand", "output", "qkv"], 4),
    "gmlp_image": (lambda: image_backbone("gmlp"), ["expand", "output"], 2),
    "mixer_image": (
        lambda: image_backbone("mixer"),
        ["channel_expand", "channel_output"],
        2,
    ),
}


def layer_of(path):
    return path.split("/")[-2]


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_lora_trains_only_the_factors_and_biases_of_the_projections(name):
    make, adapted, per_block = BACKBONES[name]
    backbone = make()
    blocks = backbone.num_layers
    backbone.enable_lora(2)
    trainable = [w.path for w in backbone.trainable_weights]
    factors = [p for p in trainable if p.endswith(("lora_kernel_a", "lora_kernel_b"))]
    # Two factors per adapted layer ("qkv" has no bias).
    assert len(factors) == 2 * per_block * blocks
    assert {layer_of(p) for p in factors} == set(adapted)
    others = [p for p in trainable if p not in factors]
    assert all(p.endswith("/bias") and layer_of(p) in adapted for p in others)
    lora = sum(int(np.prod(w.shape)) for w in backbone.trainable_weights)
    assert 0 < lora < backbone.count_params() / 2


def test_a_lora_fit_changes_only_the_factors_biases_and_head():
    backbone = text_backbone(attention_dim=4)
    classifier = gMLPTextClassifier(backbone, num_classes=3, preprocessor=None)
    backbone.enable_lora(2)
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(5, 40, (8, 8)).astype("int32"),
        "segment_ids": np.zeros((8, 8), "int32"),
        "padding_mask": np.ones((8, 8), "int32"),
    }
    y = rng.integers(0, 3, 8)
    before = {w.path: keras.ops.convert_to_numpy(w) for w in classifier.weights}
    trainable = {w.path for w in classifier.trainable_weights}
    classifier.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    classifier.fit(x, y, batch_size=4, epochs=1, verbose=0)
    for w in classifier.weights:
        changed = not np.array_equal(keras.ops.convert_to_numpy(w), before[w.path])
        if w.path not in trainable:
            assert not changed, w.path
    changed = {
        w.path
        for w in classifier.weights
        if not np.array_equal(keras.ops.convert_to_numpy(w), before[w.path])
    }
    # Every B factor starts at zero and moves; the head trains.
    assert {p for p in trainable if p.endswith("lora_kernel_b")} <= changed
    assert any(p not in {w.path for w in backbone.weights} for p in changed)


def test_lora_weights_round_trip(tmp_path):
    backbone = text_backbone(attention_dim=4)
    base = backbone.get_weights()
    backbone.enable_lora(2)
    rng = np.random.default_rng(1)
    # The file holds the factors only, as keras-hub's does.
    for w in backbone.trainable_weights:
        if "lora_kernel" in w.path:
            w.assign(rng.normal(size=w.shape).astype("float32"))
    x = {
        "token_ids": rng.integers(5, 40, (2, 8)).astype("int32"),
        "segment_ids": np.zeros((2, 8), "int32"),
        "padding_mask": np.ones((2, 8), "int32"),
    }
    expected = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
    path = str(tmp_path / "adapter.lora.h5")
    backbone.save_lora_weights(path)
    fresh = text_backbone(attention_dim=4)
    fresh.set_weights(base)
    fresh.load_lora_weights(path)
    got = keras.ops.convert_to_numpy(fresh(x)["sequence_output"])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_names_that_match_no_layer_are_refused_before_anything_is_frozen():
    backbone = text_backbone()
    trainable = len(backbone.trainable_weights)
    with pytest.raises(ValueError, match=r"named \['query'\].*\['expand', 'output'"):
        backbone.enable_lora(2, target_layer_names=["query"])
    assert len(backbone.trainable_weights) == trainable
    with pytest.raises(ValueError, match="Received: rank=0"):
        backbone.enable_lora(0)
    assert len(backbone.trainable_weights) == trainable
