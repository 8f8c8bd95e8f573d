"""Tiny models of each kind the library saves, and the outputs compared
across backends."""

import keras
import numpy as np

from keras_gmlp import layers

IMAGE_SIZE = 8
VOCABULARY_SIZE = 40
SEQUENCE_LENGTH = 8


def image_classifier():
    """A gMLP image classifier from the layers, with random weights."""
    images = keras.Input((IMAGE_SIZE, IMAGE_SIZE, 3))
    x = layers.PatchEmbedding(patch_size=4, hidden_dim=8)(images)
    x = layers.gMLPBlock(hidden_dim=8, intermediate_dim=16, sequence_length=4)(x)
    x = keras.layers.LayerNormalization()(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(images, keras.layers.Dense(3)(x))


def text_models():
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPMaskedLM

    config = dict(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=SEQUENCE_LENGTH,
        attention_dim=4,
        dropout=0.0,
    )
    masked_lm = gMLPMaskedLM(backbone=gMLPBackbone(**config), preprocessor=None)
    causal_lm = gMLPCausalLM(
        backbone=gMLPBackbone(causal=True, **config), preprocessor=None
    )
    return masked_lm, causal_lm


def make_inputs():
    rng = np.random.default_rng(7)
    lengths = np.array([SEQUENCE_LENGTH, 5])
    padding_mask = np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None]
    token_ids = np.where(
        padding_mask, rng.integers(5, VOCABULARY_SIZE, (2, SEQUENCE_LENGTH)), 0
    )
    prompt_mask = np.arange(SEQUENCE_LENGTH)[None, :] < np.array([[3], [2]])
    return {
        "images": rng.standard_normal((2, IMAGE_SIZE, IMAGE_SIZE, 3)).astype("float32"),
        "token_ids": token_ids.astype("int32"),
        "padding_mask": padding_mask.astype("int32"),
        "mask_positions": np.array([[1, 6], [0, 3]], dtype="int32"),
        "prompt_ids": np.where(prompt_mask, token_ids, 0).astype("int32"),
        "prompt_mask": prompt_mask,
    }


def model_outputs(models, inputs):
    text = {
        "token_ids": inputs["token_ids"],
        "segment_ids": np.zeros_like(inputs["token_ids"]),
        "padding_mask": inputs["padding_mask"],
    }
    causal_lm = models["causal_lm"]
    causal_lm.compile(sampler="greedy")
    generated = causal_lm.generate(
        {"token_ids": inputs["prompt_ids"], "padding_mask": inputs["prompt_mask"]},
        stop_token_ids=None,
    )
    as_numpy = keras.ops.convert_to_numpy
    return {
        "image_logits": as_numpy(models["image_classifier"](inputs["images"])),
        "masked_lm_logits": as_numpy(
            models["masked_lm"](dict(text, mask_positions=inputs["mask_positions"]))
        ),
        "causal_lm_logits": as_numpy(
            causal_lm(
                {"token_ids": text["token_ids"], "padding_mask": text["padding_mask"]}
            )
        ),
        "generated_ids": np.asarray(generated["token_ids"]),
    }
