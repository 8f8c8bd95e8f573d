import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPMaskedLM
from keras_gmlp.models import gMLPMaskedLMPreprocessor


def make_backbone(tokenizer, tiny_encoder, max_sequence_length=24, **kwargs):
    return gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        max_sequence_length=max_sequence_length,
        **{**tiny_encoder, **kwargs},
    )


def deterministic_preprocessor(tokenizer, sequence_length=24):
    """Masks every real token, so repeated calls give the same inputs."""
    return gMLPMaskedLMPreprocessor(
        tokenizer,
        sequence_length=sequence_length,
        mask_selection_rate=1.0,
        mask_token_rate=1.0,
        random_token_rate=0.0,
        mask_selection_length=sequence_length,
    )


def test_task_contract(tokenizer, tiny_encoder, corpus):
    import tensorflow as tf

    preprocessor = deterministic_preprocessor(tokenizer)
    masked_lm = gMLPMaskedLM(make_backbone(tokenizer, tiny_encoder), preprocessor)
    texts = corpus[:4]
    vocabulary_size = tokenizer.vocabulary_size()

    # predict: raw strings through the preprocessor, then a tf.data
    # pipeline with the preprocessor mapped over it.
    logits = masked_lm.predict(texts, batch_size=2, verbose=0)
    assert logits.shape == (4, 24, vocabulary_size)
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(2)
    masked_lm.preprocessor = None
    split = masked_lm.predict(ds.map(preprocessor), verbose=0)
    np.testing.assert_allclose(split, logits, atol=1e-5)

    # fit: the same two ways.
    masked_lm.fit(ds.map(preprocessor), verbose=0)
    masked_lm.preprocessor = preprocessor
    masked_lm.fit(ds, verbose=0)

    uncompiled = gMLPMaskedLM(
        make_backbone(tokenizer, tiny_encoder), preprocessor, compile=False
    )
    with pytest.raises(ValueError, match="You must call `compile"):
        uncompiled.fit(ds, verbose=0)


def test_output_layer_is_tied_to_token_embedding(tokenizer, tiny_encoder, make_batch):
    backbone = make_backbone(tokenizer, tiny_encoder)
    masked_lm = gMLPMaskedLM(backbone)
    vocabulary_size = tokenizer.vocabulary_size()
    matrices = [w for w in masked_lm.weights if vocabulary_size in w.shape]
    shapes = [tuple(w.shape) for w in matrices]
    assert shapes == [(vocabulary_size, 32), (vocabulary_size,)]

    inputs = make_batch(vocabulary_size, batch=2, length=10)
    mask_positions = np.array([[1, 4, 7], [0, 2, 9]], dtype="int32")
    logits = ops.convert_to_numpy(
        masked_lm({**inputs, "mask_positions": mask_positions})
    )
    # Reference: BERT's MLM transform in numpy, then the embedding matrix.
    sequence = ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    gathered = np.take_along_axis(sequence, mask_positions[..., None], axis=1)
    head = masked_lm.masked_lm_head
    dense, norm = head._intermediate_dense, head._intermediate_layer_norm
    kernel, bias = (ops.convert_to_numpy(w) for w in dense.weights)
    gamma, beta = (ops.convert_to_numpy(w) for w in norm.weights)
    h = gathered @ kernel + bias
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / np.sqrt(2)))
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-6)
    h = h * gamma + beta
    embeddings = ops.convert_to_numpy(backbone.token_embedding.embeddings)
    expected = h @ embeddings.T + ops.convert_to_numpy(head._bias)
    np.testing.assert_allclose(logits, expected, atol=2e-4, rtol=1e-4)


def test_mismatched_preprocessor_and_backbone(tokenizer, tiny_encoder):
    backbone = make_backbone(tokenizer, tiny_encoder, max_sequence_length=16)
    too_long = gMLPMaskedLMPreprocessor(tokenizer, sequence_length=32)
    with pytest.raises(ValueError, match="sequence_length=32.*max_sequence_length=16"):
        gMLPMaskedLM(backbone, too_long)
    small = gMLPBackbone(vocabulary_size=50, max_sequence_length=16, **tiny_encoder)
    preprocessor = gMLPMaskedLMPreprocessor(tokenizer, sequence_length=16)
    message = r"tokenizer has \d+ tokens.*vocabulary_size=50"
    with pytest.raises(ValueError, match=message):
        gMLPMaskedLM(small, preprocessor)


def test_mlm_loss_falls_on_corpus(tokenizer, tiny_encoder, corpus):
    import tensorflow as tf

    preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=32, mask_selection_length=6
    )
    masked_lm = gMLPMaskedLM(
        make_backbone(tokenizer, tiny_encoder, max_sequence_length=32)
    )
    masked_lm.compile(optimizer=keras.optimizers.Adam(5e-3))
    ds = (
        tf.data.Dataset.from_tensor_slices(corpus[:256])
        .batch(32)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .cache()
    )
    loss_before = masked_lm.evaluate(ds, verbose=0, return_dict=True)["loss"]
    masked_lm.fit(ds, epochs=4, verbose=0)
    loss_after = masked_lm.evaluate(ds, verbose=0, return_dict=True)["loss"]
    assert loss_after < 0.9 * loss_before, (loss_before, loss_after)


def test_preset_round_trip(tokenizer, tiny_encoder, make_batch, tmp_path):
    preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=20, mask_selection_length=5
    )
    masked_lm = gMLPMaskedLM(
        make_backbone(tokenizer, tiny_encoder, attention_dim=None), preprocessor
    )
    inputs = make_batch(tokenizer.vocabulary_size(), batch=2, length=20)
    inputs["mask_positions"] = np.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    expected = ops.convert_to_numpy(masked_lm(inputs))
    preset = str(tmp_path / "preset")
    masked_lm.save_to_preset(preset)

    restored = gMLPMaskedLM.from_preset(preset)
    np.testing.assert_array_equal(ops.convert_to_numpy(restored(inputs)), expected)
    assert restored.backbone.get_config() == masked_lm.backbone.get_config()
    assert restored.preprocessor.get_config() == preprocessor.get_config()
    restored_tokenizer = restored.preprocessor.tokenizer
    assert restored_tokenizer.get_vocabulary() == tokenizer.get_vocabulary()
    backbone = gMLPBackbone.from_preset(preset)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(backbone.token_embedding.embeddings),
        ops.convert_to_numpy(masked_lm.backbone.token_embedding.embeddings),
    )


def test_keras_save_and_load(tokenizer, tiny_encoder, make_batch, tmp_path):
    masked_lm = gMLPMaskedLM(
        make_backbone(tokenizer, tiny_encoder),
        gMLPMaskedLMPreprocessor(tokenizer, sequence_length=24),
    )
    inputs = make_batch(tokenizer.vocabulary_size(), batch=2, length=24)
    inputs["mask_positions"] = np.array([[1, 2], [3, 4]], dtype="int32")
    expected = ops.convert_to_numpy(masked_lm(inputs))
    path = str(tmp_path / "masked_lm.keras")
    masked_lm.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, gMLPMaskedLM)
    assert isinstance(restored.preprocessor, gMLPMaskedLMPreprocessor)
    np.testing.assert_array_equal(ops.convert_to_numpy(restored(inputs)), expected)
