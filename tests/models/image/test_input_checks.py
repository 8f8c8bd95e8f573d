"""Images of the wrong shape: refused by name on every call and every batch
of predict, evaluate and fit, and the model still works afterwards."""

import keras
import numpy as np
import pytest

from tests.models.image.conftest import family_classes
from tests.models.image.conftest import small_backbone_kwargs


def tiny_classifier(family, **backbone_changes):
    classes = family_classes(family)
    backbone = classes["backbone"](
        **dict(small_backbone_kwargs(family), **backbone_changes)
    )
    return classes["classifier"](backbone=backbone, num_classes=3, preprocessor=None)


def images(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


def as_numpy(weights):
    # Copies: on torch the arrays would share memory with the variables,
    # which the optimizer updates in place.
    return [np.array(keras.ops.convert_to_numpy(w)) for w in weights]


ALLOWED = r"\(batch, height, width, channels\) = \(batch, 16, 16, 3\)"


def test_bad_images_after_a_good_predict_are_refused_by_name(family):
    """After a first predict, TensorFlow runs later batches in a step traced
    with unknown sizes; wrong images must still get the model's ValueError
    (not a graph error), and the model then predicts as before."""
    classifier = tiny_classifier(family)
    good = images(2, 16, 16, 3)
    first = classifier.predict(good, verbose=0)
    for shape in [(2, 20, 16, 3), (2, 16, 12, 3), (2, 16, 16, 1), (2, 16, 16)]:
        received = r"images\.shape=" + str(shape).replace("(", r"\(").replace(
            ")", r"\)"
        )
        with pytest.raises(ValueError, match=ALLOWED + r"\. Received: " + received):
            classifier.predict(images(*shape), verbose=0)
    np.testing.assert_array_equal(classifier.predict(good, verbose=0), first)


def test_direct_calls_refuse_wrong_channels(family):
    """Keras' input spec lets a last axis of 1 through; the backbone's call
    does not, whether it is called alone or inside the classifier."""
    classifier = tiny_classifier(family)
    gray = images(2, 16, 16, 1)
    with pytest.raises(ValueError, match=ALLOWED):
        classifier.backbone(gray)
    with pytest.raises(ValueError, match=ALLOWED):
        classifier(gray)


def test_channels_first_names_its_layout(family):
    classifier = tiny_classifier(
        family, image_shape=(3, 16, 16), data_format="channels_first"
    )
    good = images(2, 3, 16, 16)
    first = classifier.predict(good, verbose=0)
    with pytest.raises(
        ValueError,
        match=r"\(batch, channels, height, width\) = \(batch, 3, 16, 16\)\. "
        r"Received: images\.shape=\(2, 16, 16, 3\)",
    ):
        classifier.predict(images(2, 16, 16, 3), verbose=0)
    np.testing.assert_array_equal(classifier.predict(good, verbose=0), first)


def test_refusal_while_the_step_is_traced_leaves_the_model_usable(family, monkeypatch):
    """Without the batch checks, the backbone's `call` refuses the images
    while fit, evaluate or predict traces the step; on JAX the trainer has
    detached the weights by then. They must be back, unchanged."""
    classifier = tiny_classifier(family)
    classifier.compile(
        optimizer="sgd",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    monkeypatch.setattr(classifier, "check_batch_inputs", lambda x: None)
    good = images(2, 16, 16, 3)
    gray = images(2, 16, 16, 1)
    labels = np.array([0, 2])
    weights = as_numpy(classifier.weights)
    want = keras.ops.convert_to_numpy(classifier(good))
    for run in (
        lambda: classifier.predict(gray, verbose=0),
        lambda: classifier.evaluate(gray, labels, verbose=0),
        lambda: classifier.fit(gray, labels, verbose=0),
    ):
        # Keras 3.12's trainer wraps the call's ValueError in a RuntimeError
        # when evaluate or fit first builds the model; the message is kept.
        with pytest.raises((ValueError, RuntimeError), match=ALLOWED):
            run()
        for got, expected in zip(as_numpy(classifier.weights), weights):
            np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(
        classifier.predict(good, verbose=0), want, rtol=1e-5, atol=1e-6
    )


def test_refused_batches_leave_evaluate_and_fit_working(family):
    """A refused evaluate or fit changes nothing: the loss and the trained
    weights are those of a model that never saw the bad batch."""
    classifier, reference = tiny_classifier(family), tiny_classifier(family)
    reference.set_weights(classifier.get_weights())
    for model in (classifier, reference):
        model.compile(
            optimizer=keras.optimizers.SGD(0.5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    good, labels = images(4, 16, 16, 3), np.array([0, 1, 2, 1])
    loss = classifier.evaluate(good, labels, verbose=0)
    bad = images(4, 20, 16, 3)
    with pytest.raises(ValueError, match=ALLOWED):
        classifier.evaluate(bad, labels, verbose=0)
    with pytest.raises(ValueError, match=ALLOWED):
        classifier.fit(bad, labels, verbose=0)
    assert classifier.evaluate(good, labels, verbose=0) == pytest.approx(loss)
    classifier.fit(good, labels, verbose=0)
    reference.fit(good, labels, verbose=0)
    for got, want in zip(as_numpy(classifier.weights), as_numpy(reference.weights)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
