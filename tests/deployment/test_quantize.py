"""`model.quantize("int8")` on the image and text models: outputs stay
within 3% of the float model's largest output, the dense kernels become
int8, and the quantized model survives a save and load."""

import warnings

import keras
import numpy as np
import pytest

from tests.deployment.cross_backend_models import image_classifier
from tests.deployment.cross_backend_models import make_inputs
from tests.deployment.cross_backend_models import text_models

# int8 kernels with per-output-channel scales and int8 activations: on these
# random tiny models the largest error measured was 0.9% (image) and 1.3%
# (masked LM) of the largest output.
RELATIVE_TOLERANCE = 0.03


def quantize_and_compare(
    model, inputs, tmp_path, quantized_part=None, tolerance=RELATIVE_TOLERANCE
):
    """`quantized_part` (default: `model`) is what `quantize` is called on."""
    as_numpy = keras.ops.convert_to_numpy
    reference = as_numpy(model(inputs))
    with warnings.catch_warnings():
        # Keras warns for each layer without int8 weights (norms, the spatial
        # gating unit's token-mixing matrix, adds); those stay in float.
        warnings.simplefilter("ignore", UserWarning)
        (quantized_part or model).quantize("int8")
    int8_kernels = [w for w in model.weights if w.dtype == "int8"]
    assert int8_kernels, "no layer was quantized"
    quantized = as_numpy(model(inputs))
    error = np.abs(quantized - reference).max()
    assert 0 < error <= tolerance * np.abs(reference).max()

    path = tmp_path / "quantized.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        as_numpy(reloaded(inputs)), quantized, rtol=1e-6, atol=1e-6
    )


@pytest.mark.slow
def test_int8_image_classifier(tmp_path):
    quantize_and_compare(image_classifier(), make_inputs()["images"], tmp_path)


@pytest.mark.slow
def test_int8_masked_lm(tmp_path):
    masked_lm, _ = text_models()
    inputs = make_inputs()
    text = {
        "token_ids": inputs["token_ids"],
        "segment_ids": np.zeros_like(inputs["token_ids"]),
        "padding_mask": inputs["padding_mask"],
        "mask_positions": inputs["mask_positions"],
    }
    quantize_and_compare(masked_lm, text, tmp_path)


@pytest.mark.slow
def test_int8_text_classifier_and_mixer(tmp_path):
    """The other two kinds of task: a text classifier's logits and an
    MLP-Mixer classifier's (the builders' Functional model). The text
    classifier's backbone is quantized: keras-hub cannot reload a task whose
    head outside the backbone is int8 (its BertTextClassifier neither)."""
    from keras_gmlp.applications.mlp_mixer import MLPMixer
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPTextClassifier

    keras.utils.set_random_seed(0)
    inputs = make_inputs()
    backbone = gMLPBackbone(
        vocabulary_size=40,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=8,
        attention_dim=4,
        dropout=0.0,
    )
    classifier = gMLPTextClassifier(backbone, num_classes=3, preprocessor=None)
    text = {
        "token_ids": inputs["token_ids"],
        "segment_ids": np.zeros_like(inputs["token_ids"]),
        "padding_mask": inputs["padding_mask"],
    }
    # Its logits, a random head over the mean of 8 channels, span about 1:
    # the largest error measured was 4.9% of that (PyTorch), 2.5x the
    # masked LM's.
    quantize_and_compare(classifier, text, tmp_path, classifier.backbone, 0.08)
    mixer = MLPMixer(
        num_blocks=2,
        hidden_dim=8,
        tokens_mlp_dim=4,
        channels_mlp_dim=16,
        patch_size=4,
        input_shape=inputs["images"].shape[1:],
        classes=3,
        classifier_activation=None,
    )
    quantize_and_compare(mixer, inputs["images"], tmp_path)


@pytest.mark.slow
def test_int8_causal_lm_with_its_preprocessor_generates_text(tmp_path):
    """A preset's task quantizes whole, tokenizer included, as keras-hub
    users call it; its logits stay within the tolerance, greedy generation from
    strings runs on the int8 kernels, and the reloaded task generates the
    same text."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPCausalLMPreprocessor
    from keras_gmlp.models import gMLPTokenizer

    words = ["the", "a", "class", "def", "with", "statement", "is", "an"]
    tokenizer = gMLPTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    backbone = gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=12,
        causal=True,
        dropout=0.0,
    )
    preprocessor = gMLPCausalLMPreprocessor(tokenizer, sequence_length=12)
    rng = np.random.default_rng(4)
    for variable in backbone.trainable_weights:
        variable.assign(rng.standard_normal(variable.shape))
    # From a preset, as users load one: its tokenizer is made unbuilt.
    gMLPCausalLM(backbone, preprocessor).save_to_preset(tmp_path / "preset")
    causal_lm = gMLPCausalLM.from_preset(str(tmp_path / "preset"))
    token_ids = rng.integers(5, len(words) + 5, (2, 12)).astype("int32")
    text = {"token_ids": token_ids, "padding_mask": np.ones_like(token_ids)}
    text["segment_ids"] = np.zeros_like(token_ids)
    reference = keras.ops.convert_to_numpy(causal_lm.backbone(text)["sequence_output"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        causal_lm.quantize("int8")
    assert any(w.dtype == "int8" for w in causal_lm.backbone.weights)
    quantized = keras.ops.convert_to_numpy(causal_lm.backbone(text)["sequence_output"])
    error = np.abs(quantized - reference).max()
    assert 0 < error <= RELATIVE_TOLERANCE * np.abs(reference).max()

    causal_lm.compile(sampler="greedy")
    generated = causal_lm.generate(["the class", "a def is"], max_length=10)
    assert [text.split()[:2] for text in generated] == [["the", "class"], ["a", "def"]]
    path = tmp_path / "int8_causal_lm.keras"
    causal_lm.save(path)
    reloaded = keras.saving.load_model(path)
    reloaded.compile(sampler="greedy")
    assert list(reloaded.generate(["the class", "a def is"], max_length=10)) == list(
        generated
    )


@pytest.mark.parametrize("task", ["causal", "masked"])
def test_int4_language_models_reload_to_the_same_logits(tmp_path, task):
    """`quantize("int4")` scores the vocabulary from float inputs; the
    reloaded backbone, which rebuilds its layers from their int4 dtype
    policies, must too (it gave other logits, 6e-3 of 0.8, before)."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPMaskedLM

    keras.utils.set_random_seed(0)
    backbone = gMLPBackbone(
        vocabulary_size=128,
        num_layers=2,
        hidden_dim=64,
        intermediate_dim=128,
        max_sequence_length=8,
        causal=task == "causal",
        dropout=0.0,
    )
    rng = np.random.default_rng(0)
    inputs = {
        "token_ids": rng.integers(1, 128, (2, 8)).astype("int32"),
        "padding_mask": np.ones((2, 8), bool),
    }
    if task == "causal":
        model = gMLPCausalLM(backbone)
    else:
        model = gMLPMaskedLM(backbone)
        inputs.update(
            segment_ids=np.zeros((2, 8), "int32"),
            mask_positions=np.array([[1, 5], [0, 7]], "int32"),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.quantize("int4")
    assert model.backbone.token_embedding.quantization_mode == "int4"
    expected = keras.ops.convert_to_numpy(model(inputs))
    path = tmp_path / "int4.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(reloaded(inputs)), expected
    )


def test_gptq_and_awq_calibrate_block_by_block():
    """`get_quantization_layer_structure`, Keras' hook for GPTQ and AWQ
    (keras-hub's causal LMs answer it with their embedding and transformer
    layers): the pre-block layers turn token ids into what the first gMLP
    block receives (token plus segment-0 embedding), then come the blocks;
    other modes need no structure."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPMaskedLM

    token_ids = np.random.default_rng(0).integers(1, 50, (1, 8)).astype("int32")
    as_numpy = keras.ops.convert_to_numpy
    for task, causal in ((gMLPCausalLM, True), (gMLPMaskedLM, False)):
        backbone = gMLPBackbone(
            vocabulary_size=50,
            num_layers=2,
            hidden_dim=16,
            intermediate_dim=32,
            max_sequence_length=8,
            causal=causal,
            dropout=0.0,
        )
        model = task(backbone)
        tokens = as_numpy(backbone.token_embedding.embeddings)[token_ids]
        expected = tokens + as_numpy(backbone.segment_embedding.embeddings)[0]
        assert model.get_quantization_layer_structure("int8") is None
        for mode in ("gptq", "awq"):
            structure = model.get_quantization_layer_structure(mode)
            assert structure["sequential_blocks"] == list(backbone.gmlp_blocks)
            x = token_ids
            for layer in structure["pre_block_layers"]:
                x = layer(x)
            np.testing.assert_allclose(as_numpy(x), expected, atol=1e-6)
