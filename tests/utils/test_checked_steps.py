"""Empty batches: a batch of 0 samples is refused with a ValueError by every
entry point that sees it, on every backend, for the builders' models, the
keras-hub image classifiers and the text models; the model then gives the
same outputs as before (on JAX, Keras' trainer would have left its weights
detached)."""

import contextlib

import keras
import numpy as np
import pytest

from tests.utils.tiny_image_models import builder_model
from tests.utils.tiny_image_models import keras_hub_classifier

EMPTY = r"needs at least one sample per batch; `(images|inputs|token_ids)` is an empty batch"


def text_classifier():
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPTextClassifier

    backbone = gMLPBackbone(
        vocabulary_size=40,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
    )
    return gMLPTextClassifier(backbone=backbone, num_classes=3, preprocessor=None)


def image_batch(size):
    return np.random.default_rng(0).uniform(0, 255, (size, 16, 16, 3)).astype("float32")


def text_batch(size):
    ids = np.random.default_rng(0).integers(1, 40, (size, 8)).astype("int32")
    return {
        "token_ids": ids,
        "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids),
    }


MODELS = {
    "builder": (builder_model, image_batch),
    "keras_hub": (keras_hub_classifier, image_batch),
    "text": (text_classifier, text_batch),
}


def compiled(name):
    make_model, make_batch = MODELS[name]
    model = make_model()
    model.compile(
        optimizer="sgd",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model, make_batch


def outputs(model, x):
    return np.asarray(model.predict(x, verbose=0))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_empty_batch_is_refused_and_the_model_keeps_working(name):
    model, make_batch = compiled(name)
    x, labels = make_batch(2), np.array([0, 2])
    model.fit(x, labels, verbose=0)  # Keras builds its loss and metrics here
    before = outputs(model, x)
    weights = [np.array(keras.ops.convert_to_numpy(w)) for w in model.weights]
    empty, no_labels = make_batch(0), labels[:0]
    for run in (
        lambda: model(empty),
        lambda: model.predict_on_batch(empty),
        lambda: model.test_on_batch(empty, no_labels),
        lambda: model.train_on_batch(empty, no_labels),
    ):
        with pytest.raises(ValueError, match=EMPTY):
            run()
    for got, want in zip(model.weights, weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), want)
    np.testing.assert_array_equal(outputs(model, x), before)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_empty_input_to_the_loops_leaves_the_model_working(name):
    """`fit`, `evaluate` and `predict` on an input with no samples at all.
    Where Keras 3.15 calls the step with no batch (all three loops on JAX,
    `fit` and `evaluate` on TensorFlow) the library refuses it with a
    ValueError. TensorFlow's `predict` and torch's loops never call the
    model: Keras gives its own error (`predict`: UnboundLocalError) or
    returns having done nothing."""
    model, make_batch = compiled(name)
    x, labels = make_batch(2), np.array([0, 2])
    model.fit(x, labels, verbose=0)
    before = outputs(model, x)
    empty, no_labels = make_batch(0), labels[:0]
    backend = keras.config.backend()
    loops = {
        "fit": lambda: model.fit(empty, no_labels, verbose=0),
        "evaluate": lambda: model.evaluate(empty, no_labels, verbose=0),
        "predict": lambda: model.predict(empty, verbose=0),
    }
    for loop, run in loops.items():
        if backend == "jax" or (backend == "tensorflow" and loop != "predict"):
            with pytest.raises(
                ValueError,
                match=rf"^{loop}\(\) of the model '{model.name}' needs at least "
                r"one sample; the input is empty\. Received: 0 batches$",
            ):
                run()
        else:
            # No library code runs; Keras' own outcome, whatever it is, must
            # not harm the model.
            with contextlib.suppress(Exception):
                run()
        np.testing.assert_array_equal(outputs(model, x), before)
