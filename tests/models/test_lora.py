"""LoRA on the backbones, the keras-hub way (`backbone.enable_lora(rank)`):
the channel projections are adapted, only the LoRA factors (and a task's
head) train, also on an int8-quantized backbone (QLoRA), a fitted adapter
round-trips through `save_lora_weights`, and names that match nothing are
refused before anything is frozen."""

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
def test_lora_trains_only_the_factors_of_the_projections(name):
    make, adapted, per_block = BACKBONES[name]
    backbone = make()
    blocks = backbone.num_layers
    backbone.enable_lora(2)
    trainable = [w.path for w in backbone.trainable_weights]
    factors = [p for p in trainable if p.endswith(("lora_kernel_a", "lora_kernel_b"))]
    # Two factors per adapted layer ("qkv" has no bias).
    assert len(factors) == 2 * per_block * blocks
    assert {layer_of(p) for p in factors} == set(adapted)
    assert trainable == factors
    lora = sum(int(np.prod(w.shape)) for w in backbone.trainable_weights)
    assert 0 < lora < backbone.count_params() / 2


def test_a_lora_fit_changes_only_the_factors_and_head():
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


def text_batch(rng, count=8):
    x = {
        "token_ids": rng.integers(5, 40, (count, 8)).astype("int32"),
        "segment_ids": np.zeros((count, 8), "int32"),
        "padding_mask": np.ones((count, 8), "int32"),
    }
    return x, rng.integers(0, 3, count)


@pytest.mark.parametrize("quantized", [False, True], ids=["float", "int8"])
def test_a_fitted_adapter_round_trips_and_changes_only_its_factors(tmp_path, quantized):
    """LoRA fitted on the float backbone, or on its int8 copy (QLoRA: int8
    kernels, float factors): every weight but the factors (and the head)
    stays as it was, and the saved adapter loaded into a fresh copy gives
    the fitted model's outputs."""

    def classifier():
        backbone = text_backbone(attention_dim=4)
        if quantized:
            backbone.quantize("int8")
        backbone.enable_lora(2)
        return gMLPTextClassifier(backbone, num_classes=3, preprocessor=None)

    keras.utils.set_random_seed(3)
    fitted = classifier()
    backbone = fitted.backbone
    if quantized:
        assert any(w.dtype == "int8" for w in backbone.weights)
    before = {w.path: keras.ops.convert_to_numpy(w) for w in backbone.weights}
    x, y = text_batch(np.random.default_rng(1))
    fitted.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    fitted.fit(x, y, batch_size=4, epochs=2, verbose=0)
    changed = {
        w.path
        for w in backbone.weights
        if not np.array_equal(keras.ops.convert_to_numpy(w), before[w.path])
    }
    factors = {w.path for w in backbone.weights if "lora_kernel" in w.path}
    assert changed and changed <= factors
    path = str(tmp_path / "adapter.lora.h5")
    backbone.save_lora_weights(path)
    keras.utils.set_random_seed(3)
    fresh = classifier()
    fresh.backbone.load_lora_weights(path)
    expected = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
    got = keras.ops.convert_to_numpy(fresh.backbone(x)["sequence_output"])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_names_that_match_no_layer_are_refused_before_anything_is_frozen():
    backbone = text_backbone()
    trainable = len(backbone.trainable_weights)
    with pytest.raises(ValueError, match=r"named \['query'\].*\['expand', 'output'"):
        backbone.enable_lora(2, target_layer_names=["query"])
    assert len(backbone.trainable_weights) == trainable
    with pytest.raises(ValueError, match="Received: rank=0"):
        backbone.enable_lora(0)
    assert len(backbone.trainable_weights) == trainable
