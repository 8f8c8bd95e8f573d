"""MLP-Mixer is invariant to one fixed permutation of the patches and of the
pixels within patches, once its weights are permuted the same way.

Permuting the patches permutes the tokens; permuting the token-mixing MLPs'
token axis (the first dense layer's inputs, the second's outputs and bias)
and the mean over tokens undo it. Permuting the pixels within every patch is
undone by permuting the stem kernel's pixel positions. So the classifier's
outputs agree to float32 round-off, with every weight random.
"""

import keras
import numpy as np

from keras_gmlp.layers import MixerBlock
from keras_gmlp.layers import PatchEmbedding

PATCH, ROWS, COLUMNS = 4, 3, 4
TOKENS = ROWS * COLUMNS


def mixer_classifier(rng):
    inputs = keras.Input((ROWS * PATCH, COLUMNS * PATCH, 3))
    x = PatchEmbedding(patch_size=PATCH, hidden_dim=8, name="stem")(inputs)
    for index in range(2):
        x = MixerBlock(8, 6, 16, TOKENS, name=f"blocks_{index}")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, keras.layers.Dense(5)(x))
    for variable in model.weights:
        variable.assign(rng.standard_normal(variable.shape) / 2)
    return model


def permute_images(images, token_order, pixel_order):
    """Patch k of the result is patch token_order[k] of the input; pixel q
    within each patch is pixel pixel_order[q]."""
    batch, channels = images.shape[0], images.shape[-1]
    patches = images.reshape(batch, ROWS, PATCH, COLUMNS, PATCH, channels)
    patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(
        batch, TOKENS, PATCH * PATCH, channels
    )
    patches = patches[:, token_order][:, :, pixel_order]
    patches = patches.reshape(batch, ROWS, COLUMNS, PATCH, PATCH, channels)
    return patches.transpose(0, 1, 3, 2, 4, 5).reshape(images.shape)


def permute_weights(model, token_order, pixel_order):
    stem = model.get_layer("stem").projection.kernel
    kernel = keras.ops.convert_to_numpy(stem)
    flat = kernel.reshape(PATCH * PATCH, *kernel.shape[2:])
    stem.assign(flat[pixel_order].reshape(kernel.shape))
    for index in range(2):
        block = model.get_layer(f"blocks_{index}")
        expand, output = block.token_expand_dense, block.token_output_dense
        expand.kernel.assign(keras.ops.convert_to_numpy(expand.kernel)[token_order])
        output.kernel.assign(keras.ops.convert_to_numpy(output.kernel)[:, token_order])
        output.bias.assign(keras.ops.convert_to_numpy(output.bias)[token_order])


def test_mixer_is_invariant_to_a_fixed_patch_and_pixel_permutation(rng):
    model = mixer_classifier(rng)
    images = rng.uniform(-1, 1, (3, ROWS * PATCH, COLUMNS * PATCH, 3)).astype("float32")
    token_order = rng.permutation(TOKENS)
    pixel_order = rng.permutation(PATCH * PATCH)
    permuted = permute_images(images, token_order, pixel_order)
    before = keras.ops.convert_to_numpy(model(images))
    # The permutation alone changes the outputs: the weights carry the order.
    assert np.abs(keras.ops.convert_to_numpy(model(permuted)) - before).max() > 1e-2
    permute_weights(model, token_order, pixel_order)
    after = keras.ops.convert_to_numpy(model(permuted))
    np.testing.assert_allclose(after, before, atol=1e-5, rtol=1e-5)
