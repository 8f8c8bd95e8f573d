"""keras_gmlp.applications.enable_lora on the builders' functional models:
only the LoRA factors of the blocks' channel projections, those layers'
biases and the head train, and every refusal comes before anything is
frozen.

Cost: two tiny models per family, one two-step fit each."""

import keras
import numpy as np
import pytest

from keras_gmlp.applications import enable_lora
from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer

BLOCKS = 2
# Each family's channel projections (the default targets), and the names of
# every layer LoRA can adapt: the stem's convolution and the head too.
ADAPTED = {"gmlp": ["expand", "output"], "mixer": ["channel_expand", "channel_output"]}
ADAPTABLE = {
    "gmlp": ["expand", "output", "predictions", "projection"],
    "mixer": [
        "channel_expand",
        "channel_output",
        "predictions",
        "projection",
        "token_expand",
        "token_output",
    ],
}


def small_model(family):
    common = dict(
        num_blocks=BLOCKS,
        hidden_dim=8,
        patch_size=4,
        input_shape=(8, 8, 3),
        classes=3,
        classifier_activation=None,
    )
    if family == "gmlp":
        return gMLP(intermediate_dim=16, **common)
    return MLPMixer(tokens_mlp_dim=4, channels_mlp_dim=16, **common)


def re_list(names):
    return r"\[" + ", ".join(f"'{name}'" for name in names) + r"\]"


def values(model):
    return {w.path: keras.ops.convert_to_numpy(w).copy() for w in model.weights}


def trainable_paths(model):
    return sorted(w.path for w in model.trainable_weights)


@pytest.mark.parametrize("family", ["gmlp", "mixer"])
def test_a_fit_changes_only_the_factors_the_adapted_biases_and_the_head(family):
    model = small_model(family)
    enable_lora(model, 2)
    expected = sorted(
        [
            f"blocks_{block}/{layer}/{weight}"
            for block in range(BLOCKS)
            for layer in ADAPTED[family]
            for weight in ("bias", "lora_kernel_a", "lora_kernel_b")
        ]
        + ["predictions/bias", "predictions/kernel"]
    )
    assert trainable_paths(model) == expected
    before = values(model)
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 255, (8, 8, 8, 3)).astype("float32")
    labels = rng.integers(0, 3, 8)
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    # Two steps: the first moves the B factors off zero, the second then
    # moves the A factors too.
    model.fit(images, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
    after = values(model)
    for path, value in after.items():
        if path in expected:
            assert not np.array_equal(value, before[path]), f"{path} did not train"
        else:
            np.testing.assert_array_equal(value, before[path], err_msg=path)


def test_target_layer_names_choose_the_adapted_layers():
    model = small_model("mixer")
    enable_lora(model, 3, target_layer_names=["token_expand"])
    factors = [p for p in trainable_paths(model) if "lora_kernel" in p]
    assert factors == [
        f"blocks_{block}/token_expand/lora_kernel_{part}"
        for block in range(BLOCKS)
        for part in "ab"
    ]


def assert_untouched(model, trainable):
    assert trainable_paths(model) == trainable
    assert not any("lora" in w.path for w in model.weights)


@pytest.mark.parametrize("family", ["gmlp", "mixer"])
def test_names_that_match_no_layer_are_refused_before_anything_is_frozen(family):
    model = small_model(family)
    trainable = trainable_paths(model)
    message = (
        r"named \['query', 'value'\]\. Received: "
        r"target_layer_names=\['query', 'value'\]; the layers LoRA can adapt "
        rf"are named {re_list(ADAPTABLE[family])}"
    )
    with pytest.raises(ValueError, match=message):
        enable_lora(model, 2, target_layer_names=["query", "value"])
    assert_untouched(model, trainable)


@pytest.mark.parametrize("rank", [0, -1, "2", 2.0, True])
def test_a_rank_that_is_not_a_positive_int_is_refused(rank):
    model = small_model("gmlp")
    trainable = trainable_paths(model)
    with pytest.raises(ValueError, match=f"Received: rank={rank!r}$"):
        enable_lora(model, rank)
    assert_untouched(model, trainable)


def test_a_second_enable_lora_is_refused_before_anything_changes():
    model = small_model("gmlp")
    enable_lora(model, 2)
    trainable = trainable_paths(model)
    with pytest.raises(ValueError, match=r"already enabled on the layers named"):
        enable_lora(model, 4, target_layer_names=["expand", "predictions"])
    assert trainable_paths(model) == trainable
    assert not model.get_layer("predictions").lora_enabled
