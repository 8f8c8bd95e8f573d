"""
Title: Image classification from scratch with gMLP and MLP-Mixer
Author: keras-gmlp contributors
Date created: 2026/11/23
Last modified: 2026/11/23
Description: Training gMLP and MLP-Mixer image classifiers from scratch, with augmentation, a warmup-cosine schedule and a look at the learned spatial weights.
Accelerator: GPU
"""

"""
## Introduction

gMLP and MLP-Mixer classify images without convolutions (apart from the
patch stem) and without attention: both cut the image into patches and mix
information across patches with plain matrices over the token axis. This
guide trains both from scratch on the same data with the same recipe,
compares their learning curves, and draws what gMLP's spatial gating units
learned: the paper (Liu et al., 2021, Figure 3) finds local,
convolution-like filters that nobody built in.

The data is CIFAR-10 when tensorflow-datasets has it on disk, otherwise
scikit-learn's handwritten digits, which ship with scikit-learn, so the
guide always runs offline.

## Setup
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import math

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.visualization import plot_spatial_weights

# `KERAS_GMLP_GUIDE_FAST=1` uses the digits and a few epochs, so CI can run it.
FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
# Its figures and files go to outputs/guides/ in the current folder.
OUTPUT_DIR = os.path.join("outputs", "guides", "image_classification_from_scratch")
os.makedirs(OUTPUT_DIR, exist_ok=True)
keras.utils.set_random_seed(42)

"""
## The data

`tfds.load(..., download=False)` reads CIFAR-10 only if it was prepared
before (`tfds.load("cifar10")` once, with a network connection); it fails
fast otherwise, and we fall back to the digits. Those are 8x8 grey images
with 16 grey levels; we upscale them to 16x16 RGB in `[0, 255]`, the
range the models expect (they rescale to `[-1, 1]` inside, as timm does).
"""


def load_cifar10():
    import tensorflow_datasets as tfds

    train, test = tfds.as_numpy(
        tfds.load(
            "cifar10",
            split=["train", "test"],
            as_supervised=True,
            batch_size=-1,
            download=False,
        )
    )
    return train, test


def load_upscaled_digits():
    digits = load_digits()
    images = digits.images.repeat(2, axis=1).repeat(2, axis=2) * (255.0 / 16.0)
    images = np.repeat(images[..., None], 3, axis=-1).astype("float32")
    order = np.random.default_rng(0).permutation(len(images))
    images, labels = images[order], digits.target[order]
    return (images[:1437], labels[:1437]), (images[1437:], labels[1437:])


dataset_name = "digits"
if not FAST:
    try:
        (train_images, train_labels), (test_images, test_labels) = load_cifar10()
        dataset_name = "CIFAR-10"
    except Exception as error:  # not installed, or not downloaded
        print(f"CIFAR-10 not available ({type(error).__name__}); using the digits.")
if dataset_name == "digits":
    (train_images, train_labels), (test_images, test_labels) = load_upscaled_digits()
train_images = train_images.astype("float32")
test_images = test_images.astype("float32")
IMAGE_SHAPE = train_images.shape[1:]
print(
    f"{dataset_name}: {len(train_images)} training and {len(test_images)} "
    f"test images of shape {IMAGE_SHAPE}"
)

"""
## Augmentation

Without convolutions' built-in locality, MLP models overfit small datasets
quickly; the papers train with heavy augmentation. Keras' random image
layers work with every backend. We apply them in a `tf.data` pipeline,
where they run as TensorFlow ops on the input workers, in parallel with
training and off the accelerator, whichever backend trains the model.
Digits must not be flipped; CIFAR-10's photos may.
"""

augmentation_layers = [
    keras.layers.RandomTranslation(0.1, 0.1, fill_mode="constant"),
    keras.layers.RandomRotation(0.04, fill_mode="constant"),
]
if dataset_name == "CIFAR-10":
    augmentation_layers.insert(0, keras.layers.RandomFlip("horizontal"))


def augment(images, labels):
    for layer in augmentation_layers:
        images = layer(images, training=True)
    return images, labels


def make_training_dataset(batch_size):
    return (
        tf.data.Dataset.from_tensor_slices((train_images, train_labels))
        .shuffle(len(train_images), seed=0)
        .batch(batch_size)
        .map(augment, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )


"""
## The models

`gMLP(...)` and `MLPMixer(...)` are the generic builders behind
`gMLPS`, `MixerB16` and the other paper sizes. With 2x2 patches on 16x16
digits (4x4 patches on 32x32 CIFAR-10), both see an 8x8 grid of 64 tokens.
"""

PATCH_SIZE = 2 if dataset_name == "digits" else 4
NUM_BLOCKS = 2 if FAST else 8
WIDTH = 64 if FAST else 128


def make_classifiers():
    gmlp = gMLP(
        num_blocks=NUM_BLOCKS,
        hidden_dim=WIDTH,
        intermediate_dim=6 * WIDTH,
        patch_size=PATCH_SIZE,
        input_shape=IMAGE_SHAPE,
        classes=10,
        drop_path_rate=0.0 if FAST else 0.1,
        name="gmlp",
    )
    mixer = MLPMixer(
        num_blocks=NUM_BLOCKS,
        hidden_dim=WIDTH,
        tokens_mlp_dim=WIDTH // 2,
        channels_mlp_dim=4 * WIDTH,
        patch_size=PATCH_SIZE,
        input_shape=IMAGE_SHAPE,
        classes=10,
        drop_path_rate=0.0 if FAST else 0.1,
        name="mixer",
    )
    return gmlp, mixer


gmlp_classifier, mixer_classifier = make_classifiers()
for classifier in (gmlp_classifier, mixer_classifier):
    print(f"{classifier.name}: {classifier.count_params():,} parameters")

"""
## The learning-rate schedule

Both papers warm the learning rate up linearly, then let it decay along a
cosine. `keras.optimizers.schedules.CosineDecay` does both: it climbs from
`initial_learning_rate` to `warmup_target` over `warmup_steps`, then decays
over `decay_steps`. AdamW's decoupled weight decay regularises further.
"""

BATCH_SIZE = 64 if dataset_name == "digits" else 128
EPOCHS = 4 if FAST else 100
steps_per_epoch = math.ceil(len(train_images) / BATCH_SIZE)
warmup_steps = steps_per_epoch * (1 if FAST else 5)


def make_optimizer():
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=1e-5,
        decay_steps=steps_per_epoch * EPOCHS - warmup_steps,
        warmup_target=3e-3 if FAST else 1e-3,
        warmup_steps=warmup_steps,
    )
    return keras.optimizers.AdamW(learning_rate=schedule, weight_decay=0.05)


"""
## Training

The same recipe for both models; the test images serve as validation data
so that we can plot curves (a real study would hold out a validation split).
"""

histories, accuracies = {}, {}  # chance accuracy: 0.1
for model in (gmlp_classifier, mixer_classifier):
    model.compile(
        optimizer=make_optimizer(),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    print(f"Training {model.name}")
    history = model.fit(
        make_training_dataset(BATCH_SIZE),
        epochs=EPOCHS,
        validation_data=(test_images, test_labels),
        verbose=2,
    )
    histories[model.name] = history.history
    accuracies[model.name] = history.history["val_accuracy"][-1]

gmlp_test_accuracy, mixer_test_accuracy = accuracies["gmlp"], accuracies["mixer"]
print(f"Test accuracy: gMLP {gmlp_test_accuracy:.3f}, Mixer {mixer_test_accuracy:.3f}")

"""
## Training curves
"""

figure, (loss_ax, accuracy_ax) = plt.subplots(1, 2, figsize=(10, 4))
for name, history in histories.items():
    epochs = np.arange(1, len(history["loss"]) + 1)
    for ax, key in ((loss_ax, "loss"), (accuracy_ax, "accuracy")):
        (line,) = ax.plot(epochs, history[key], label=f"{name} train")
        ax.plot(
            epochs,
            history[f"val_{key}"],
            "--",
            color=line.get_color(),
            label=f"{name} test",
        )
        ax.set_xlabel("epoch")
        ax.set_ylabel(key)
accuracy_ax.legend()
curves_path = os.path.join(OUTPUT_DIR, "training_curves.png")
figure.savefig(curves_path, dpi=100)
plt.close(figure)
print("Saved", curves_path)

"""
## What the spatial gating units learned

Row `m` of an SGU's `W` says how token `m` gathers the other tokens. Drawn
on the 8x8 patch grid, each panel below is one token's row (the cross
marks the token itself) in one block. Trained long enough on real images
(the full-size settings), the weights concentrate around the token, like a
convolution's receptive field; after the few epochs of the fast mode they
are still close to their near-zero start.

We also measure it: the share of `|W|` that falls on the token and its 8
neighbours, against the share those 9 cells would get if the weights were
spread evenly.
"""

figure = plot_spatial_weights(gmlp_classifier)
spatial_path = os.path.join(OUTPUT_DIR, "spatial_weights.png")
figure.savefig(spatial_path, dpi=100)
print("Saved", spatial_path)

rows, columns = 8, 8
row_of, column_of = np.divmod(np.arange(rows * columns), columns)
near = (np.abs(row_of[:, None] - row_of[None, :]) <= 1) & (
    np.abs(column_of[:, None] - column_of[None, :]) <= 1
)
for index in range(NUM_BLOCKS):
    block = gmlp_classifier.get_layer(f"blocks_{index}")
    weights = np.abs(keras.ops.convert_to_numpy(block.spatial_gating_unit.kernel)[0])
    local_share = (weights * near).sum() / weights.sum()
    print(
        f"block {index}: {local_share:.0%} of |W| on the 3x3 neighbourhood "
        f"(spread evenly: {near.mean():.0%})"
    )

"""
## Going further

The paper's sizes are `keras_gmlp.applications.gMLPS(...)`, `MixerB16(...)`
and friends; *Transfer learning* starts them from timm's ImageNet weights.
`applications/train_image_classifier.py` trains from the command line.
"""
