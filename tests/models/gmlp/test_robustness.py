"""Hostile inputs to the text models: poisoned padding, refused batches."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPMaskedLM
from keras_gmlp.models import gMLPTextClassifier


def tiny_backbone(causal=False, attention_dim=4):
    return gMLPBackbone(
        vocabulary_size=40,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
        attention_dim=attention_dim,
        causal=causal,
        dropout=0.0,
    )


@pytest.mark.parametrize("causal", [False, True])
def test_nan_embedding_of_the_pad_token_does_not_reach_real_tokens(causal, make_batch):
    """The pad token's embedding row is NaN; the real tokens' outputs and the
    pooled mean still equal those of the same text without padding."""
    backbone = tiny_backbone(causal=causal)
    embeddings = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)
    embeddings[0] = np.nan
    backbone.token_embedding.embeddings.assign(embeddings)
    real_length = 5
    padded = make_batch(40, batch=1, length=8, real_lengths=[real_length])
    unpadded = {k: v[:, :real_length] for k, v in padded.items()}
    got = backbone(padded)
    want = backbone(unpadded)
    sequence = keras.ops.convert_to_numpy(got["sequence_output"])
    np.testing.assert_allclose(
        sequence[:, :real_length],
        keras.ops.convert_to_numpy(want["sequence_output"]),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(got["pooled_output"]),
        keras.ops.convert_to_numpy(want["pooled_output"]),
        rtol=1e-5,
        atol=1e-5,
    )


def test_model_stays_usable_after_predict_and_evaluate_refuse_input(make_batch):
    """On JAX, Keras detaches the weights during predict and evaluate; a step
    that raises (here: text longer than max_sequence_length) must not leave
    them detached."""
    backbone = tiny_backbone()
    batch = make_batch(40, batch=2, length=8)
    too_long = make_batch(40, batch=2, length=9)
    before = backbone.predict(batch, verbose=0)["pooled_output"]
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        backbone.predict(too_long, verbose=0)
    after = backbone.predict(batch, verbose=0)["pooled_output"]
    np.testing.assert_array_equal(after, before)

    masked_lm = gMLPMaskedLM(backbone=backbone, preprocessor=None)
    mask_positions = np.array([[1, 2], [0, 3]], dtype="int32")
    x = dict(batch, mask_positions=mask_positions)
    y = np.array([[5, 6], [7, 8]])
    loss = masked_lm.evaluate(x, y, verbose=0)
    bad_x = dict(too_long, mask_positions=mask_positions)
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        masked_lm.evaluate(bad_x, y, verbose=0)
    with pytest.raises(ValueError, match="max_sequence_length=8"):
        masked_lm.fit(bad_x, y, verbose=0)
    assert masked_lm.evaluate(x, y, verbose=0) == pytest.approx(loss)
    np.testing.assert_array_equal(
        backbone.predict(batch, verbose=0)["pooled_output"], before
    )


def refuse_copies_to_host(monkeypatch):
    """Makes every way of reading a backend tensor's values from Python
    raise: numpy conversion and the tensors' own host-copy methods."""

    def refuse(*args, **kwargs):
        raise AssertionError("a tensor was copied to the host")

    for name in ("asarray", "array"):
        convert = getattr(np, name)

        def guarded(x, *args, _convert=convert, **kwargs):
            if keras.ops.is_tensor(x):
                refuse()
            return _convert(x, *args, **kwargs)

        monkeypatch.setattr(np, name, guarded)
    backend = keras.config.backend()
    if backend == "tensorflow":
        from tensorflow.python.framework import ops

        tensor_class, names = ops._EagerTensorBase, ("numpy", "_numpy")
    elif backend == "torch":
        import torch

        tensor_class, names = torch.Tensor, ("numpy", "cpu", "tolist", "item")
    else:
        from jax._src.array import ArrayImpl

        tensor_class, names = ArrayImpl, ("tolist", "item", "__int__")
    for name in names:
        monkeypatch.setattr(tensor_class, name, refuse)


def test_forward_pass_does_not_read_the_ids(make_batch, monkeypatch):
    """A call on backend tensors (every step of `fit` and `predict`) must not
    copy the ids back to the host to range-check them: on a GPU that is a
    device synchronisation per step."""
    backbone = tiny_backbone()
    batch = make_batch(40, batch=2, length=8, real_lengths=[8, 5])
    tensors = {k: keras.ops.convert_to_tensor(v) for k, v in batch.items()}
    want = keras.ops.convert_to_numpy(backbone(tensors)["pooled_output"])
    with monkeypatch.context() as patch:
        refuse_copies_to_host(patch)
        outputs = backbone(tensors)
    got = keras.ops.convert_to_numpy(outputs["pooled_output"])
    np.testing.assert_array_equal(got, want)


def test_ids_out_of_range_are_refused_before_the_step(make_batch):
    """Direct calls and the batches of fit, evaluate, predict and the
    *_on_batch methods are range-checked in host memory before any step
    runs. The weights stay as they were."""
    backbone = tiny_backbone()
    masked_lm = gMLPMaskedLM(backbone=backbone, preprocessor=None)
    masked_lm.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    before = as_numpy(masked_lm.weights)
    y = np.array([[5, 6], [7, 8]])
    for argument, value, message in [
        ("token_ids", 40, "vocabulary_size=40.*Received: a token id of 40"),
        ("token_ids", -3, "Received: a token id of -3"),
        ("segment_ids", 2, "num_segments=2.*Received: a segment id of 2"),
    ]:
        batch = make_batch(40, batch=2, length=8)
        batch[argument][1, 2] = value
        x = dict(batch, mask_positions=np.array([[1, 2], [0, 3]], dtype="int32"))
        # A direct call on numpy arrays or lists, of the backbone or a task.
        with pytest.raises(ValueError, match=message):
            backbone(batch)
        with pytest.raises(ValueError, match=message):
            backbone({k: v.tolist() for k, v in batch.items()})
        with pytest.raises(ValueError, match=message):
            masked_lm(x)
        with pytest.raises(ValueError, match=message):
            backbone.predict(batch, verbose=0)
        with pytest.raises(ValueError, match=message):
            backbone.predict_on_batch(batch)
        with pytest.raises(ValueError, match=message):
            masked_lm.fit(x, y, verbose=0)
        with pytest.raises(ValueError, match=message):
            masked_lm.train_on_batch(x, y)
        with pytest.raises(ValueError, match=message):
            masked_lm.evaluate(x, y, verbose=0)
    for variable, value in zip(masked_lm.weights, before):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), value)


def test_padding_mask_of_another_shape_is_refused(make_batch):
    backbone = tiny_backbone()
    batch = make_batch(40, batch=2, length=8)
    for shape in [(2, 7), (1, 8), (2, 8, 1)]:
        bad = dict(batch, padding_mask=np.ones(shape, "int32"))
        with pytest.raises(ValueError, match=r"`padding_mask` must have the shape"):
            backbone(bad)
        if shape[0] != 2:
            # Keras' data adapter refuses another batch size itself (in
            # Keras 3.15 its message fails with an AttributeError when `x`
            # is a dict).
            continue
        with pytest.raises(ValueError, match=r"padding_mask.shape="):
            backbone.predict(bad, verbose=0)


def test_zero_length_input_is_refused(make_batch):
    backbone = tiny_backbone()
    empty = {k: v[:, :0] for k, v in make_batch(40, batch=2, length=8).items()}
    with pytest.raises(ValueError, match="at least one token.*sequence length 0"):
        backbone(empty)
    with pytest.raises(ValueError, match="at least one token"):
        backbone.predict(empty, verbose=0)


LOGITS_LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def tiny_classifier():
    return gMLPTextClassifier(
        backbone=tiny_backbone(), num_classes=3, preprocessor=None, dropout=0.0
    )


def as_numpy(weights):
    # Copies: on torch the arrays would share memory with the variables,
    # which the optimizer updates in place.
    return [np.array(keras.ops.convert_to_numpy(w)) for w in weights]


def test_bad_batch_after_a_good_predict_is_refused_by_name(make_batch):
    """After a first predict, TensorFlow runs later batches in a step traced
    with unknown lengths; a bad batch must still get the model's ValueError
    (not a graph error), and the model then predicts as before."""
    classifier = tiny_classifier()
    good = make_batch(40, batch=2, length=6)
    first = classifier.predict(good, verbose=0)
    bad_batches = [
        (
            make_batch(40, batch=2, length=9),
            (
                r"max_sequence_length=8; inputs must have at most 8 tokens\. "
                r"Received: sequence length 9"
            ),
        ),
        (
            dict(good, padding_mask=np.ones((2, 5), "int32")),
            (
                r"`padding_mask` must have the shape of `token_ids`, \(2, 6\)\. "
                r"Received: padding_mask\.shape=\(2, 5\)"
            ),
        ),
        (
            {k: v[..., None] for k, v in good.items()},
            r"`token_ids` of rank 2.*Received: token_ids\.shape=\(2, 6, 1\)",
        ),
    ]
    for bad, message in bad_batches:
        with pytest.raises(ValueError, match=message):
            classifier.predict(bad, verbose=0)
    np.testing.assert_array_equal(classifier.predict(good, verbose=0), first)


def test_refusal_while_the_step_is_traced_leaves_the_model_usable(
    make_batch, monkeypatch
):
    """Without the batch checks, the backbone's `call` refuses the batch
    while fit, evaluate or predict traces the step; on JAX the trainer has
    detached the weights by then. They must be back, unchanged."""
    classifier = tiny_classifier()
    classifier.compile(optimizer="sgd", loss=LOGITS_LOSS)
    monkeypatch.setattr(classifier, "check_batch_inputs", lambda x: None)
    good = make_batch(40, batch=2, length=6)
    bad = make_batch(40, batch=2, length=9)
    labels = np.array([0, 2])
    weights = as_numpy(classifier.weights)
    want = keras.ops.convert_to_numpy(classifier(good))
    for run in (
        lambda: classifier.predict(bad, verbose=0),
        lambda: classifier.evaluate(bad, labels, verbose=0),
        lambda: classifier.fit(bad, labels, verbose=0),
    ):
        # Keras 3.12 (the floor) wraps a refusal in its first symbolic build
        # of fit/evaluate in a RuntimeError that carries the message.
        with pytest.raises((ValueError, RuntimeError), match="max_sequence_length=8"):
            run()
        for got, expected in zip(as_numpy(classifier.weights), weights):
            np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(
        classifier.predict(good, verbose=0), want, rtol=1e-5, atol=1e-6
    )


def test_fit_refused_on_a_later_batch_keeps_the_steps_before_it(make_batch):
    """A batch refused in the middle of `fit` stops it with the weights of
    the steps that ran: those of a model fitted on the good batch alone."""
    good = make_batch(40, batch=2, length=6)
    bad = make_batch(40, batch=2, length=9)
    labels = np.array([0, 2], "int32")

    def batches(*inputs):
        spec = {k: tf.TensorSpec((None, None), tf.int32) for k in good}
        return tf.data.Dataset.from_generator(
            lambda: ((x, labels) for x in inputs),
            output_signature=(spec, tf.TensorSpec((None,), tf.int32)),
        )

    classifier, reference = tiny_classifier(), tiny_classifier()
    reference.set_weights(classifier.get_weights())
    initial = as_numpy(classifier.weights)
    for model in (classifier, reference):
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=LOGITS_LOSS)
    with pytest.raises(ValueError, match="Received: sequence length 9"):
        classifier.fit(batches(good, bad), verbose=0)
    reference.fit(batches(good), verbose=0)
    trained = as_numpy(reference.weights)
    # The good step did change the weights.
    assert not all(np.array_equal(a, b) for a, b in zip(trained, initial))
    for got, want in zip(as_numpy(classifier.weights), trained):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        classifier.predict(good, verbose=0),
        reference.predict(good, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )
