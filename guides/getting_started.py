"""
Title: Getting started with keras-gmlp
Author: keras-gmlp contributors
Date created: 2026/11/23
Last modified: 2026/11/23
Description: The gMLP layers, what the spatial gating unit learns, and a first model trained with fit, saved and reloaded.
Accelerator: None
"""

"""
## Introduction

gMLP ("Pay Attention to MLPs", Liu et al., 2021) replaces self-attention
with a *spatial gating unit* (SGU): a plain linear map along the token axis,
used as a multiplicative gate. keras-gmlp provides it and its relatives as
Keras 3 layers that run unchanged on TensorFlow, JAX and PyTorch. This guide:

1. tours the layers,
2. trains one SGU on a toy task and looks at what its weight matrix `W` learns,
3. builds an image classifier from the layers and trains it with `fit`,
4. saves it to a `.keras` file, reloads it, and explains how to switch backends.

## Setup

The backend is chosen by the `KERAS_BACKEND` environment variable, read once
when `keras` is first imported. Set it before that import (or in your shell).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import keras_gmlp

# `KERAS_GMLP_GUIDE_FAST=1` shrinks data and training so CI can run the guide.
FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
# Its figures and files go to outputs/guides/ in the current folder.
OUTPUT_DIR = os.path.join("outputs", "guides", "getting_started")
os.makedirs(OUTPUT_DIR, exist_ok=True)
keras.utils.set_random_seed(42)
print("Backend:", keras.backend.backend())

"""
## The layers

All layers live in `keras_gmlp.layers` and take `(batch, tokens, channels)`
tensors, except `PatchEmbedding`, which turns images into tokens.

- `SpatialGatingUnit(sequence_length)`: splits the channels into halves `u`
  and `v`, normalises `v`, mixes it across tokens with
  `v'[m] = sum_n W[m, n] v[n] + b[m]`, and returns `u * v'`.
- `gMLPBlock(hidden_dim, intermediate_dim, sequence_length)`: LayerNorm,
  a dense expansion with GELU, the SGU, a dense projection back, and a
  residual connection. With `attention_dim=...` it becomes an aMLP block:
  a one-head `TinyAttention` is added to the gate.
- `MixerBlock(hidden_dim, tokens_mlp_dim, channels_mlp_dim, sequence_length)`:
  the MLP-Mixer block (a token-mixing MLP, then a channel-mixing MLP).
- `PatchEmbedding(patch_size, hidden_dim)`: a strided convolution that cuts
  an image into patches and flattens the patch grid row by row.
- `StochasticDepth(rate)`: drops a residual branch per example in training.
"""

tokens = keras.random.normal((2, 16, 64), seed=0)
sgu = keras_gmlp.layers.SpatialGatingUnit(sequence_length=16)
gated = sgu(tokens)
print("SGU:", tokens.shape, "->", gated.shape)
print("W:", sgu.kernel.shape, " b:", sgu.bias.shape)

"""
`W` has a leading head axis (`num_heads=1` here). It starts near zero and
`b` at one, so a fresh unit returns `u` unchanged: a new gMLP block begins
as an ordinary feed-forward block and learns how much to mix tokens.
"""

u = keras.ops.convert_to_numpy(tokens)[..., :32]
print(
    "max |SGU(x) - u| at initialisation:",
    np.abs(u - keras.ops.convert_to_numpy(gated)).max(),
)

block = keras_gmlp.layers.gMLPBlock(
    hidden_dim=64, intermediate_dim=256, sequence_length=16
)
amlp_block = keras_gmlp.layers.gMLPBlock(
    hidden_dim=64, intermediate_dim=256, sequence_length=16, attention_dim=32
)
mixer_block = keras_gmlp.layers.MixerBlock(
    hidden_dim=64, tokens_mlp_dim=32, channels_mlp_dim=256, sequence_length=16
)
for layer in (block, amlp_block, mixer_block):
    output = layer(tokens)
    print(
        f"{layer.name:22s} {tokens.shape} -> {output.shape}, "
        f"{layer.count_params():,} parameters"
    )

"""
## What the spatial gating unit's W learns

`W[m, n]` is how much token `m` reads from token `n`. To see it learn, we
give a single gMLP block a task that only token mixing can solve: output
each sequence shifted two positions to the right (`y[m] = x[m - 2]`,
wrapping around). A dense layer on each token cannot do this; the SGU can,
by putting its weight on the entry two places left of the diagonal.
"""

LENGTH, FEATURES = 16, 8
rng = np.random.default_rng(0)
sequences = rng.normal(size=(1024 if FAST else 4096, LENGTH, FEATURES))
sequences = sequences.astype("float32")
shifted = np.roll(sequences, 2, axis=1)

shift_block = keras_gmlp.layers.gMLPBlock(32, 128, LENGTH, name="shift_block")
inputs = keras.Input((LENGTH, FEATURES))
x = keras.layers.Dense(32)(inputs)
x = shift_block(x)
outputs = keras.layers.Dense(FEATURES)(x)
shift_model = keras.Model(inputs, outputs)
shift_model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse")
shift_model.fit(sequences, shifted, batch_size=64, epochs=4 if FAST else 10, verbose=2)

"""
Each row of the trained `W` should peak two columns left of the diagonal.
We count the rows where it does (chance: 1 in 16) and draw the matrix.
"""

W = keras.ops.convert_to_numpy(shift_block.spatial_gating_unit.kernel)[0]
strongest_source = np.argmax(np.abs(W), axis=1)
shift_rows_found = float(np.mean(strongest_source == (np.arange(LENGTH) - 2) % LENGTH))
print(f"Rows of W that read token m - 2: {shift_rows_found:.0%}")

figure, ax = plt.subplots(figsize=(4.6, 4), layout="constrained")
limit = np.abs(W).max()
image = ax.imshow(W, cmap="RdBu_r", vmin=-limit, vmax=limit)
ax.set_xticks(range(0, LENGTH, 2))
ax.set_yticks(range(0, LENGTH, 2))
ax.set_xlabel("source token n")
ax.set_ylabel("output token m")
ax.set_title("Trained SGU kernel W")
figure.colorbar(image, ax=ax, shrink=0.8, label="W[m, n]")
figure.savefig(os.path.join(OUTPUT_DIR, "sgu_kernel.png"), dpi=100)
plt.close(figure)
print("Saved", os.path.join(OUTPUT_DIR, "sgu_kernel.png"))

"""
On images the same matrix, drawn on the patch grid for one output token,
shows a local "filter" (the paper's Figure 3);
`keras_gmlp.visualization.plot_spatial_weights` draws those, see the
*Image classification from scratch* guide.

## A model from the layers, trained with fit

scikit-learn's handwritten digits (8x8 grey images, shipped with the
library) make an offline dataset. `PatchEmbedding` cuts each image into a
4x4 grid of 2x2 patches, so the gMLP blocks see 16 tokens. The head is the
paper's: LayerNorm, mean over tokens, dense. Keras' `LayerNormalization`
defaults to `epsilon=1e-3`; gMLP uses `1e-6`.
"""

digits = load_digits()
images = (digits.images[..., None] / 16.0).astype("float32")
labels = digits.target
split = 1536  # 24 batches of 64
train_images, test_images = images[:split], images[split:]
train_labels, test_labels = labels[:split], labels[split:]

inputs = keras.Input((8, 8, 1))
x = keras_gmlp.layers.PatchEmbedding(patch_size=2, hidden_dim=64)(inputs)
for _ in range(2 if FAST else 4):
    x = keras_gmlp.layers.gMLPBlock(64, 256, sequence_length=16)(x)
x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
x = keras.layers.GlobalAveragePooling1D()(x)
outputs = keras.layers.Dense(10, activation="softmax")(x)
model = keras.Model(inputs, outputs, name="digits_gmlp")
model.summary()

model.compile(
    optimizer=keras.optimizers.AdamW(learning_rate=2e-3, weight_decay=0.01),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
model.fit(
    train_images,
    train_labels,
    batch_size=64,
    epochs=5 if FAST else 30,
    verbose=2,
)
test_loss, test_accuracy = model.evaluate(test_images, test_labels, verbose=0)
print(f"Test accuracy: {test_accuracy:.3f} (chance: 0.1)")

"""
## Saving and loading

The layers are registered Keras serializables, so the whole model (its
architecture, weights and optimizer state) goes into one `.keras` file and
comes back with `keras.models.load_model`, with no `custom_objects`
needed once `keras_gmlp` is imported.
"""

path = os.path.join(OUTPUT_DIR, "digits_gmlp.keras")
model.save(path)
reloaded = keras.models.load_model(path)
reload_max_difference = float(
    np.abs(
        model.predict(test_images, verbose=0) - reloaded.predict(test_images, verbose=0)
    ).max()
)
print(f"Saved {path}; max difference after reloading: {reload_max_difference:.2e}")

"""
To keep only the weights, use `model.save_weights("digits.weights.h5")`
and `model.load_weights(...)` on a model built the same way.

## Switching backends

Nothing in this guide depended on the backend. Run it again with another
one and the same code trains on TensorFlow, JAX or PyTorch:

```shell
KERAS_BACKEND=tensorflow .venv/bin/python guides/getting_started.py
KERAS_BACKEND=torch .venv/bin/python guides/getting_started.py
```

A `.keras` file stores backend-independent NumPy weights, so a model saved
under one backend loads under any other: train on JAX, serve from
TensorFlow. The *Export and serving* guide does exactly that. Within one
process the backend is fixed at the first `import keras`;
`keras.config.set_backend` exists but invalidates every object created
before it, so prefer one backend per process.

## Next steps

- `keras_gmlp.applications` builds the paper's image models (`gMLPS`,
  `MixerB16`, ...) with timm's ImageNet weights: see *Transfer learning*.
- `keras_gmlp.models` has gMLP/aMLP text models on keras-hub: see
  *Masked language modeling* and *Text generation*.
"""
