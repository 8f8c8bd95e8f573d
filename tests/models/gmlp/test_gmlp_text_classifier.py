import keras
import numpy as np
import pytest
from keras import ops

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPMaskedLM
from keras_gmlp.models import gMLPMaskedLMPreprocessor
from keras_gmlp.models import gMLPTextClassifier
from keras_gmlp.models import gMLPTextClassifierPreprocessor


def make_backbone(tokenizer, tiny_encoder, max_sequence_length=24):
    return gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        max_sequence_length=max_sequence_length,
        **tiny_encoder,
    )


def test_task_contract_single_sentences(tokenizer, tiny_encoder, corpus):
    import tensorflow as tf

    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=24)
    classifier = gMLPTextClassifier(
        make_backbone(tokenizer, tiny_encoder), num_classes=3, preprocessor=preprocessor
    )
    texts, labels = corpus[:4], np.array([0, 1, 2, 1])

    logits = classifier.predict(texts, batch_size=2, verbose=0)
    assert logits.shape == (4, 3)
    ds = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(2)
    classifier.preprocessor = None
    split = classifier.predict(ds.map(preprocessor), verbose=0)
    np.testing.assert_allclose(split, logits, atol=1e-5)

    classifier.fit(ds.map(preprocessor), verbose=0)
    classifier.preprocessor = preprocessor
    classifier.fit(ds, verbose=0)

    uncompiled = gMLPTextClassifier(
        make_backbone(tokenizer, tiny_encoder),
        num_classes=3,
        preprocessor=preprocessor,
        compile=False,
    )
    with pytest.raises(ValueError, match="You must call `compile"):
        uncompiled.fit(ds, verbose=0)


def test_sentence_pairs(tokenizer, tiny_encoder, corpus):
    import tensorflow as tf

    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=24)
    classifier = gMLPTextClassifier(
        make_backbone(tokenizer, tiny_encoder), num_classes=2, preprocessor=preprocessor
    )
    first, second = tf.constant(corpus[:4]), tf.constant(corpus[4:8])
    # Pairs for predict: an `(x,)` tuple, so the pair is not read as (x, y).
    pairs = tf.data.Dataset.from_tensor_slices(((first, second),)).batch(2)
    logits = classifier.predict(pairs, verbose=0)
    assert logits.shape == (4, 2)
    direct = classifier(preprocessor(x=(first, second)))
    np.testing.assert_allclose(logits, ops.convert_to_numpy(direct), atol=1e-5)
    # The second segment matters: its segment ids differ from the first's.
    swapped = classifier(preprocessor(x=(second, first)))
    assert not np.allclose(ops.convert_to_numpy(swapped), logits, atol=1e-6)


def test_padding_invariance_end_to_end(tokenizer, tiny_encoder, rng):
    backbone = make_backbone(tokenizer, tiny_encoder, max_sequence_length=128)
    # Fresh spatial weights are ~0 and would hide any token mixing.
    for variable in backbone.weights:
        if "spatial_gating_unit" in variable.path and "kernel" in variable.path:
            variable.assign(rng.normal(0, 0.3, tuple(variable.shape)).astype("float32"))
    sentence = ["the value of an object is returned by the function"]
    outputs = {}
    for length in (16, 128):
        preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=length)
        outputs[length] = {
            key: ops.convert_to_numpy(value)
            for key, value in backbone(preprocessor(sentence)).items()
        }
        real = int(np.sum(ops.convert_to_numpy(preprocessor(sentence)["padding_mask"])))
    assert real < 16
    short, long = outputs[16], outputs[128]
    np.testing.assert_allclose(
        long["sequence_output"][0, :real], short["sequence_output"][0, :real], atol=1e-5
    )
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_fine_tune_from_masked_lm_preset(tokenizer, tiny_encoder, corpus, tmp_path):
    masked_lm = gMLPMaskedLM(
        make_backbone(tokenizer, tiny_encoder),
        gMLPMaskedLMPreprocessor(tokenizer, sequence_length=24),
    )
    preset = str(tmp_path / "pretrained")
    masked_lm.save_to_preset(preset)

    classifier = gMLPTextClassifier.from_preset(preset, num_classes=2)
    assert isinstance(classifier.preprocessor, gMLPTextClassifierPreprocessor)
    assert classifier.preprocessor.sequence_length == 24
    for saved, loaded in zip(masked_lm.backbone.weights, classifier.backbone.weights):
        np.testing.assert_array_equal(
            ops.convert_to_numpy(loaded), ops.convert_to_numpy(saved)
        )
    history = classifier.fit(
        x=corpus[:8], y=np.array([0, 1] * 4), batch_size=4, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()


def test_keras_save_and_load(tokenizer, tiny_encoder, corpus, tmp_path):
    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=24)
    classifier = gMLPTextClassifier(
        make_backbone(tokenizer, tiny_encoder),
        num_classes=2,
        preprocessor=preprocessor,
        activation="softmax",
    )
    inputs = preprocessor(corpus[:2])
    expected = ops.convert_to_numpy(classifier(inputs))
    path = str(tmp_path / "classifier.keras")
    classifier.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, gMLPTextClassifier)
    np.testing.assert_array_equal(ops.convert_to_numpy(restored(inputs)), expected)
    np.testing.assert_allclose(expected.sum(axis=-1), 1.0, rtol=1e-6)


def test_mismatched_preprocessor_and_backbone(tokenizer, tiny_encoder):
    backbone = make_backbone(tokenizer, tiny_encoder, max_sequence_length=16)
    too_long = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=17)
    with pytest.raises(ValueError, match="sequence_length=17.*max_sequence_length=16"):
        gMLPTextClassifier(backbone, num_classes=2, preprocessor=too_long)
    small = gMLPBackbone(vocabulary_size=50, max_sequence_length=16, **tiny_encoder)
    preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=16)
    with pytest.raises(ValueError, match="vocabulary_size=50"):
        gMLPTextClassifier(small, num_classes=2, preprocessor=preprocessor)
