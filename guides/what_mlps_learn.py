"""
Title: What the MLPs learn: token mixing, patch order and Toeplitz filters
Author: keras-gmlp contributors
Date created: 2026/11/24
Last modified: 2026/11/24
Description: Drawing MLP-Mixer's token-mixing units, showing that Mixer ignores a fixed shuffle of patches and pixels while a CNN does not, and scoring how shift-invariant a language model's spatial filters are.
Accelerator: None
"""

"""
## Introduction

MLP-Mixer mixes the patches of an image with plain dense layers over the
token axis. Two consequences that the MLP-Mixer paper (Tolstikhin et al.,
2021, section 3.4 and Figure 5) points out:

- Nothing in Mixer knows which patch sits next to which. Shuffle the
  patches, and the pixels within each patch, with one fixed permutation
  applied to every image, and Mixer learns exactly as well. A CNN, whose
  kernels assume neighbouring pixels belong together, does not.
- The hidden units of the token-mixing MLPs can be drawn on the patch
  grid, which shows what regions each unit pools.

gMLP's language models have a matching picture: the rows of each spatial
gating unit's `W`. The gMLP paper found them local and almost the same at
every position (Toeplitz-like); `toeplitz_score` measures how close.

## Setup
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import keras
import numpy as np
from sklearn.datasets import load_digits

import keras_gmlp
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.visualization import plot_text_spatial_filters
from keras_gmlp.visualization import plot_token_mixing_units
from keras_gmlp.visualization import toeplitz_scores

# `KERAS_GMLP_GUIDE_FAST=1` trains for a few epochs and one seed, for CI.
FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
EPOCHS = 2 if FAST else 30
SEEDS = [0] if FAST else [0, 1, 2]
# Its figures and files go to outputs/guides/ in the current folder.
OUTPUT_DIR = os.path.join("outputs", "guides", "what_mlps_learn")
os.makedirs(OUTPUT_DIR, exist_ok=True)

"""
## The data, and one fixed permutation

scikit-learn's handwritten digits, upscaled to 16x16 RGB in `[0, 255]`: a
4x4 grid of 4x4 patches. One permutation of the 16 patches and one of the
16 pixels within a patch are drawn once and applied to every image.
"""

digits = load_digits()
images = np.repeat(np.repeat(digits.images, 2, axis=1), 2, axis=2) * (255 / 16)
images = np.repeat(images[..., None], 3, axis=-1).astype("float32")
labels = digits.target.astype("int32")
order = np.random.default_rng(0).permutation(len(images))
images, labels = images[order], labels[order]
split = int(0.8 * len(images))

PATCH, GRID = 4, 4
rng = np.random.default_rng(2021)
patch_order = rng.permutation(GRID * GRID)
pixel_order = rng.permutation(PATCH * PATCH)


def permute(batch):
    """Patch k becomes patch `patch_order[k]`, pixel q within each patch
    becomes pixel `pixel_order[q]`."""
    n, channels = len(batch), batch.shape[-1]
    patches = batch.reshape(n, GRID, PATCH, GRID, PATCH, channels)
    patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(
        n, GRID * GRID, PATCH * PATCH, channels
    )
    patches = patches[:, patch_order][:, :, pixel_order]
    patches = patches.reshape(n, GRID, GRID, PATCH, PATCH, channels)
    return patches.transpose(0, 1, 3, 2, 4, 5).reshape(batch.shape)


shuffled = permute(images)

"""
## Mixer and a small CNN, on the original and the shuffled images

Each model is trained with the same seed, so the original and the shuffled
runs start from the same weights and see the batches in the same order.
"""


def mixer():
    return MLPMixer(
        num_blocks=4,
        hidden_dim=64,
        tokens_mlp_dim=32,
        channels_mlp_dim=128,
        patch_size=PATCH,
        input_shape=(16, 16, 3),
        classes=10,
        classifier_activation=None,
    )


def cnn():
    return keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Rescaling(1 / 127.5, offset=-1),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )


def test_accuracy(make_model, data, seed):
    keras.utils.set_random_seed(seed)
    model = make_model()
    model.compile(
        optimizer=keras.optimizers.AdamW(2e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(data[:split], labels[:split], batch_size=64, epochs=EPOCHS, verbose=0)
    return model, model.evaluate(data[split:], labels[split:], verbose=0)[1]


results, trained = {}, {}
for name, make_model in [("mixer", mixer), ("cnn", cnn)]:
    for data_name, data in [("original", images), ("shuffled", shuffled)]:
        results[name, data_name] = []
        for seed in SEEDS:
            trained[name, data_name], accuracy = test_accuracy(make_model, data, seed)
            results[name, data_name].append(accuracy)
        accuracies = results[name, data_name]
        print(
            f"{name:5s} {data_name:8s} test accuracy: "
            f"{np.mean(accuracies):.3f} (seeds: {', '.join(f'{a:.3f}' for a in accuracies)})"
        )

mixer_accuracy = float(np.mean(results["mixer", "original"]))
mixer_shuffled_accuracy = float(np.mean(results["mixer", "shuffled"]))
cnn_accuracy = float(np.mean(results["cnn", "original"]))
cnn_shuffled_accuracy = float(np.mean(results["cnn", "shuffled"]))

"""
Why Mixer's two numbers agree, within the spread from seed to seed: the
shuffle only reorders the tokens (the patches) and the stem's inputs (the
pixels of a patch). Reordering the rows of the token-mixing weights and of
the stem kernel the same way gives a model whose outputs on shuffled images
are exactly the original's on the originals. So training on shuffled images
is training the same family of models, from an initialisation that is just
as random after the reordering. The CNN's kernels, in contrast, read 3x3
neighbourhoods, and the shuffle scatters neighbours.

The exact form of the property, on a random Mixer: permute its weights, and
its outputs on shuffled images equal the original model's on the originals.
"""

keras.utils.set_random_seed(7)
model = mixer()
reference = keras.ops.convert_to_numpy(model(images[:8]))
stem = model.get_layer("stem").projection.kernel
kernel = keras.ops.convert_to_numpy(stem)
stem.assign(kernel.reshape(PATCH * PATCH, 3, -1)[pixel_order].reshape(kernel.shape))
for layer in model.layers:
    if isinstance(layer, keras_gmlp.layers.MixerBlock):
        expand, output = layer.token_expand_dense, layer.token_output_dense
        expand.kernel.assign(keras.ops.convert_to_numpy(expand.kernel)[patch_order])
        output.kernel.assign(keras.ops.convert_to_numpy(output.kernel)[:, patch_order])
        output.bias.assign(keras.ops.convert_to_numpy(output.bias)[patch_order])
permuted_max_difference = float(
    np.abs(keras.ops.convert_to_numpy(model(shuffled[:8])) - reference).max()
)
print(
    f"Largest output difference, permuted weights on shuffled images: {permuted_max_difference:.1e}"
)

"""
## The token-mixing units

Each panel is one hidden unit of the first token-mixing MLP of a Mixer
trained on the original digits, drawn on the 4x4 patch grid. On a grid this
small the units are coarse; trained on ImageNet at 14x14 they show the
paired, local detectors of the MLP-Mixer paper.
"""

figure = plot_token_mixing_units(
    trained["mixer", "original"], blocks=[0, 1], units=range(8)
)
figure.savefig(os.path.join(OUTPUT_DIR, "token_mixing_units.png"), dpi=100)
print("Saved", os.path.join(OUTPUT_DIR, "token_mixing_units.png"))

"""
## How shift-invariant are a language model's filters?

`toeplitz_score` replaces each diagonal of `W` by its mean and reports the
share of `W`'s energy that this shift-invariant copy keeps: 1.0 for an
exact Toeplitz matrix, about `2 / n` for noise (one mean per diagonal,
and there are about 2 / n as many diagonals as entries). A freshly built model has
W drawn at random near zero; `applications/pretrain_mlm.py` and
`applications/train_causal_lm.py` report the score before and after
training. Here a small causal model learns to copy the token two places
back, a task whose ideal `W` is exactly Toeplitz.
"""

LENGTH, VOCABULARY = 24, 16
sequence_rng = np.random.default_rng(1)
tokens = sequence_rng.integers(1, VOCABULARY, (2048, LENGTH)).astype("int32")
targets = np.roll(tokens, 2, axis=1)
targets[:, :2] = 0
keras.utils.set_random_seed(0)
copier = keras.Sequential(
    [
        keras.Input((LENGTH,), dtype="int32"),
        keras.layers.Embedding(VOCABULARY, 32),
        keras_gmlp.layers.gMLPBlock(32, 128, LENGTH, causal=True),
        keras.layers.Dense(VOCABULARY),
    ]
)
initial_toeplitz_score = toeplitz_scores(copier)[0]
copier.compile(
    optimizer=keras.optimizers.Adam(3e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
copier.fit(tokens, targets, batch_size=64, epochs=3 if FAST else 10, verbose=0)
trained_toeplitz_score = toeplitz_scores(copier)[0]
print(
    f"Toeplitz score: {initial_toeplitz_score:.2f} at initialisation, "
    f"{trained_toeplitz_score:.2f} after training"
)
figure = plot_text_spatial_filters(copier, tokens=[8, 16, 23])
figure.savefig(os.path.join(OUTPUT_DIR, "spatial_filters.png"), dpi=100)

"""
## Conclusion

Mixer's accuracy does not depend on where the patches and pixels sit, to
round-off; a CNN's does. What a Mixer cannot know about the image's
geometry it has to learn from data, which is why the paper needs large
datasets for it to match CNNs. The language model's filters, by contrast,
become shift-invariant when the task is, and `toeplitz_score` tells you how
far they got.
"""
