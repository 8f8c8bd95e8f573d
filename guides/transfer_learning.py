"""
Title: Transfer learning with timm's ImageNet gMLP weights
Author: keras-gmlp contributors
Date created: 2026/11/23
Last modified: 2026/11/23
Description: Loading timm ImageNet checkpoints into gMLP at a new resolution, extracting frozen features, fine-tuning to new classes and decoding ImageNet predictions.
Accelerator: GPU
"""

"""
## Introduction

timm publishes ImageNet weights for gMLP-S (`gmlp_s16_224.ra3_in1k`) and
for MLP-Mixer B/16 and L/16. `keras_gmlp.applications` reads timm's
`.safetensors` (and `.pth`) checkpoints directly: `weights="imagenet"`
downloads the file once into `~/.keras/models`, and `weights="path"` loads
any checkpoint in timm's format. This guide:

1. loads the weights into a model for a *new resolution*, which needs the
   spatial weights resampled,
2. uses the network as a frozen feature extractor
   (`include_top=False, pooling="avg"`) under a new classifier,
3. fine-tunes the whole network on the new classes,
4. decodes ImageNet predictions with `decode_predictions`.

**About the fast mode.** CI and `KERAS_GMLP_GUIDE_FAST=1` run offline, so
they cannot download the 80 MB gMLP-S checkpoint. There the guide first
trains a small gMLP on handwritten digits 0-4 and writes *that* model to a
`.safetensors` file in timm's format (`timm_state_dict`, the inverse of the
loader). Everything after that point is the same code path as with the real
ImageNet file; only the sizes and the data differ.

## Setup
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import keras
import numpy as np
from safetensors.numpy import save_file
from sklearn.datasets import load_digits
from sklearn.datasets import load_sample_images

from keras_gmlp.applications import decode_predictions
from keras_gmlp.applications import enable_lora
from keras_gmlp.applications import gMLPS
from keras_gmlp.applications import timm_state_dict
from keras_gmlp.applications.gmlp import gMLP

FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
# Its figures and files go to outputs/guides/ in the current folder.
OUTPUT_DIR = os.path.join("outputs", "guides", "transfer_learning")
os.makedirs(OUTPUT_DIR, exist_ok=True)
keras.utils.set_random_seed(42)

digits = load_digits()


def upscaled_digits(classes, size):
    """The digits of `classes` as RGB `size` x `size` images in [0, 255]."""
    keep = np.isin(digits.target, classes)
    factor = size // 8
    images = digits.images[keep].repeat(factor, axis=1).repeat(factor, axis=2)
    images = np.repeat(images[..., None] * (255.0 / 16.0), 3, axis=-1)
    labels = np.searchsorted(classes, digits.target[keep])
    order = np.random.default_rng(0).permutation(len(labels))
    return images[order].astype("float32"), labels[order]


"""
## The pretrained checkpoint

With the full settings, `gMLPS(weights="imagenet")` fetches timm's file. In
fast mode we make the stand-in: a 2-block gMLP trained at 16x16 pixels
(4x4 patches, a 4x4 token grid) on digits 0-4, saved in timm's format.
"""

if FAST:
    SOURCE_SIZE, TARGET_SIZE, SOURCE_CLASSES = 16, 24, [0, 1, 2, 3, 4]
    SMALL_GMLP = dict(num_blocks=2, hidden_dim=64, intermediate_dim=256, patch_size=4)
    source_model = gMLP(
        **SMALL_GMLP, input_shape=(SOURCE_SIZE, SOURCE_SIZE, 3), classes=5
    )
    source_model.compile(
        optimizer=keras.optimizers.Adam(2e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    source_model.fit(
        *upscaled_digits(SOURCE_CLASSES, SOURCE_SIZE),
        batch_size=64,
        epochs=4,
        verbose=2,
    )
    checkpoint = os.path.join(OUTPUT_DIR, "gmlp_digits_16.safetensors")
    save_file(timm_state_dict(source_model), checkpoint)
    print("Wrote the stand-in checkpoint", checkpoint)

    def pretrained_gmlp(**kwargs):
        return gMLP(**SMALL_GMLP, weights=checkpoint, **kwargs)

else:
    SOURCE_SIZE, TARGET_SIZE = 224, 256

    def pretrained_gmlp(**kwargs):
        return gMLPS(weights="imagenet", **kwargs)


"""
## A new resolution: resampling the spatial weights

A convolution's kernel does not depend on the image size; a spatial gating
unit's does. Its `W` is `tokens x tokens`: at 224x224 with 16x16 patches
that is a 14x14 grid, 196 tokens, while at 256x256 it is 16x16, 256 tokens.
Each row of `W` is a filter laid over the patch grid (token `m` gathering
the others), so the loader treats both axes of `W` as 2-D grids and
resizes them bilinearly to the new grid, like resizing an image. The
summed axis (the tokens being gathered) is rescaled so that a filter keeps
its total weight when the grid gets denser. Mixer's token-mixing MLPs are
resampled the same way. Every other weight is independent of the size.

Below, the checkpoint's grid and the model's differ, and the loader
resamples on the fly: nothing to do but ask for the new `input_shape`.
"""

features = pretrained_gmlp(
    include_top=False, pooling="avg", input_shape=(TARGET_SIZE, TARGET_SIZE, 3)
)
sgu = features.get_layer("blocks_0").spatial_gating_unit
print(
    f"{SOURCE_SIZE}px checkpoint -> {TARGET_SIZE}px model: "
    f"SGU kernel {tuple(sgu.kernel.shape)}; features {features.output.shape}"
)

"""
## New classes: the data

In fast mode the new task is the *other* five digits, 5-9, at 24x24 pixels
(6x6 tokens). With the full settings it is tf-flowers (five kinds of
flowers) from tensorflow-datasets when prepared on disk, else the same
digits at 256x256 pixels. Either way, five classes: chance is 20%.
"""

NEW_CLASSES = [5, 6, 7, 8, 9]
CLASS_NAMES = [f"digit {digit}" for digit in NEW_CLASSES]
BATCH_SIZE = 32


def load_new_task():
    if not FAST:
        try:
            import tensorflow as tf
            import tensorflow_datasets as tfds

            flowers, info = tfds.load(
                "tf_flowers",
                split="train",
                as_supervised=True,
                download=False,
                with_info=True,
            )
            CLASS_NAMES[:] = info.features["label"].names
            flowers = (
                flowers.map(lambda x, y: (tf.image.resize(x, (TARGET_SIZE,) * 2), y))
                .batch(BATCH_SIZE)
                .prefetch(2)
            )
            return flowers.skip(20), flowers.take(20)
        except Exception as error:  # not installed, or not prepared
            print(f"tf_flowers not available ({type(error).__name__}); using digits.")
    images, labels = upscaled_digits(NEW_CLASSES, TARGET_SIZE)
    split = int(0.7 * len(labels))
    return (images[:split], labels[:split]), (images[split:], labels[split:])


train_data, test_data = load_new_task()


def fit(model, data, **kwargs):
    if isinstance(data, tuple):
        return model.fit(*data, batch_size=BATCH_SIZE, verbose=2, **kwargs)
    return model.fit(data, verbose=2, **kwargs)


def accuracy(model, data):
    if isinstance(data, tuple):
        return model.evaluate(*data, batch_size=BATCH_SIZE, verbose=0)[1]
    return model.evaluate(data, verbose=0)[1]


"""
## Frozen feature extraction

`include_top=False, pooling="avg"` returns one vector per image: the
final LayerNorm's tokens averaged, exactly what the ImageNet head saw.
Freeze the network (`trainable = False`) and train only a new dense
classifier on top. This is cheap, needs little data, and cannot damage
the pretrained weights.
"""

inputs = keras.Input((TARGET_SIZE, TARGET_SIZE, 3))
outputs = keras.layers.Dense(len(CLASS_NAMES), activation="softmax")(features(inputs))
classifier = keras.Model(inputs, outputs)

features.trainable = False
classifier.compile(
    optimizer=keras.optimizers.Adam(1e-2),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
fit(classifier, train_data, epochs=3 if FAST else 10)
frozen_test_accuracy = accuracy(classifier, test_data)
print(
    f"Frozen features + new head: test accuracy {frozen_test_accuracy:.3f} (chance 0.2)"
)

"""
## Fine-tuning

Then unfreeze everything and continue with a learning rate about 100x
smaller, so the pretrained features adapt to the new task without being
overwritten by the large early gradients of a fresh head (which is why the
head was trained first). Changing `trainable` requires compiling again.
"""

features.trainable = True
classifier.compile(
    optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.05),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
fit(classifier, train_data, epochs=3 if FAST else 10)
fine_tuned_test_accuracy = accuracy(classifier, test_data)
print(f"Fine-tuned: test accuracy {fine_tuned_test_accuracy:.3f} (chance 0.2)")

path = os.path.join(OUTPUT_DIR, "fine_tuned.keras")
classifier.save(path)
print("Saved", path)

"""
## LoRA: train a few thousand weights instead

`enable_lora(model, rank)` is keras-hub's `backbone.enable_lora(rank)` for
these models: every weight frozen but rank-`r` factors on the blocks'
channel projections, their biases and the `"predictions"` head. In
the first round of benchmarks/lora_and_quantization.py (3 seeds) rank 4 on the digits trained
8% of the weights and matched full fine-tuning (median accuracy 0.978, at
10x the learning rate); on the text task it fell short (0.47 vs 0.61).
"""

body = pretrained_gmlp(include_top=False, pooling="avg", input_shape=inputs.shape[1:])
head = keras.layers.Dense(len(CLASS_NAMES), activation="softmax", name="predictions")
lora_classifier = keras.Model(body.input, head(body.output))
enable_lora(lora_classifier, rank=4)
lora_classifier.compile(
    optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.05),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
fit(lora_classifier, train_data, epochs=3 if FAST else 10)
lora_trainable = sum(int(np.prod(w.shape)) for w in lora_classifier.trainable_weights)
lora_test_accuracy = accuracy(lora_classifier, test_data)
print(f"LoRA: {lora_trainable} of {lora_classifier.count_params()} parameters trained")
print(f"LoRA: test accuracy {lora_test_accuracy:.3f} (chance 0.2)")

"""
## ImageNet predictions and `decode_predictions`

With its 1000-class head (`include_top=True`, the default) the model
predicts ImageNet classes directly, at 224x224 pixels. The models take raw
pixels in `[0, 255]` and normalise inside, so `preprocess_input` is a
pass-through kept for keras.applications compatibility.
`decode_predictions` turns the probabilities into `(class id, name,
score)` triples, using the same class list file as `keras.applications`
(downloaded once into `~/.keras/models`). The photos are the two that ship
with scikit-learn.

In fast mode the stand-in has no ImageNet head; its own five digit classes
are decoded the same way by hand.
"""

if FAST:
    samples, _ = upscaled_digits(SOURCE_CLASSES, SOURCE_SIZE)
    probabilities = source_model.predict(samples[:3], verbose=0)
    for row in probabilities:
        best = np.argsort(row)[::-1][:3]
        print([(f"digit {SOURCE_CLASSES[i]}", round(float(row[i]), 3)) for i in best])
else:
    photos = np.stack(load_sample_images().images).astype("float32")
    photos = keras.ops.image.resize(photos, (224, 224))
    imagenet_model = gMLPS(weights="imagenet")
    probabilities = imagenet_model.predict(photos, verbose=0)
    for name, decoded in zip(
        ["china.jpg", "flower.jpg"], decode_predictions(probabilities, top=3)
    ):
        print(name, [(label, round(float(score), 3)) for _, label, score in decoded])
