"""How well a trained gMLP keeps its predictions at another resolution.

Trains a tiny gMLP on scikit-learn's handwritten digits (8x8, bilinearly
upsampled to 16x16, patch 2: an 8x8 token grid), then evaluates the same
test digits upsampled to other sizes with the weights loaded through
`load_timm_weights`, which resamples the spatial gating weights to the new
grid. Two baselines: resampling without the token-count factor on the summed
axis, and the spatial weights left at their initial values (W = 0, b = 1),
which is what loaders that skip mismatched shapes end up with.

    KERAS_BACKEND=jax python benchmarks/resampling_accuracy.py --epochs 10
"""

import keras
import numpy as np
from _flags import FlagParser
from sklearn.datasets import load_digits

import keras_gmlp.utils.timm.state_dict as weights_module
from keras_gmlp.applications import load_timm_weights
from keras_gmlp.applications import timm_state_dict
from keras_gmlp.applications.gmlp import gMLP


def main():
    parser = FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 20, 24, 32])
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    digits = load_digits()
    images = digits.images[..., None].astype("float32") * (255.0 / 16.0)
    labels = digits.target
    order = np.random.default_rng(0).permutation(len(labels))
    train, test = order[:1400], order[1400:]

    def at(size):
        resized = keras.ops.image.resize(images, (size, size), interpolation="bilinear")
        return keras.ops.convert_to_numpy(resized)

    def build(size):
        return gMLP(
            num_blocks=2,
            hidden_dim=32,
            intermediate_dim=64,
            patch_size=2,
            input_shape=(size, size, 1),
            classes=10,
            classifier_activation=None,
        )

    def evaluate(model, x):
        predictions = model.predict(x, verbose=0).argmax(-1)
        return (predictions == labels[test]).mean(), predictions

    model = build(16)
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(
        at(16)[train], labels[train], epochs=args.epochs, batch_size=64, verbose=0
    )
    accuracy, native = evaluate(model, at(16)[test])
    print(f"16x16 (8x8 tokens, trained): accuracy {accuracy:.3f}")
    state = timm_state_dict(model)
    resample = weights_module.resample_token_axis

    def unscaled(array, axis, source, target, summed=False):
        return resample(array, axis, source, target, summed=False)

    for size in args.sizes:
        x = at(size)[test]
        tokens = (size // 2) ** 2
        results = {}
        resampled = build(size)
        load_timm_weights(resampled, state)
        results["resampled"] = evaluate(resampled, x)
        weights_module.resample_token_axis = unscaled
        try:
            plain = build(size)
            load_timm_weights(plain, state)
        finally:
            weights_module.resample_token_axis = resample
        results["unscaled"] = evaluate(plain, x)
        at_init = dict(state)
        for key in state:
            if key.endswith("gate.proj.weight"):
                at_init[key] = np.zeros((tokens, tokens), "float32")
            elif key.endswith("gate.proj.bias"):
                at_init[key] = np.ones((tokens,), "float32")
        initial = build(size)
        load_timm_weights(initial, at_init)
        results["SGU at init"] = evaluate(initial, x)
        print(
            f"{size}x{size} ({size // 2}x{size // 2} tokens): "
            + " | ".join(
                f"{name}: accuracy {acc:.3f}, agreement {(pred == native).mean():.3f}"
                for name, (acc, pred) in results.items()
            )
        )


if __name__ == "__main__":
    main()
