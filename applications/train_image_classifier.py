"""Train a gMLP image classifier.

The offline default trains a small gMLP on scikit-learn's bundled
handwritten digits (8x8 images, upsampled to 16x16, patch 4) for a few
epochs and finishes in about a minute on a laptop CPU:

    python applications/train_image_classifier.py

Flags scale it up: `--depth 30 --width 256 --image-size 224 --patch-size 16`
is gMLP-S; `--dataset imagenet2012 --data-dir ...` reads a dataset through
tensorflow-datasets; `--mixed-precision` trains in mixed bfloat16.
"""

import argparse
import time

import keras
import numpy as np

import keras_gmlp
from keras_gmlp import layers


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="digits",
                        help="'digits' (offline, bundled with scikit-learn) or a "
                             "tensorflow-datasets image classification name")
    parser.add_argument("--data-dir", default=None, help="tensorflow-datasets data_dir")
    parser.add_argument("--image-size", type=int, default=16)
    parser.add_argument("--patch-size", type=int, default=4)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=64, help="d_model")
    parser.add_argument("--ffn-ratio", type=int, default=6, help="d_ffn / d_model")
    parser.add_argument("--drop-path-rate", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--mixed-precision", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default=None, help="path of a .keras file to write")
    return parser.parse_args(argv)


def load_digits(image_size):
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    if image_size % 8:
        raise ValueError(
            f"--image-size must be a multiple of 8 for the digits data. "
            f"Received: --image-size={image_size}"
        )
    scale = image_size // 8
    images = np.kron(digits.images, np.ones((scale, scale)))
    # Raw-pixel range, as the model's own Rescaling layer expects.
    images = (images * 255.0 / 16.0).astype("float32")[..., None]
    labels = digits.target.astype("int32")
    order = np.random.default_rng(0).permutation(len(labels))
    images, labels = images[order], labels[order]
    split = int(0.8 * len(labels))
    return (images[:split], labels[:split]), (images[split:], labels[split:]), 10


def load_tfds(name, data_dir, image_size, batch_size):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    (train, test), info = tfds.load(
        name, split=["train", "test"], as_supervised=True, data_dir=data_dir,
        with_info=True,
    )

    def resize(image, label):
        image = tf.image.resize(tf.cast(image, "float32"), (image_size, image_size))
        return image, label

    def prepare(ds, shuffle):
        ds = ds.map(resize, num_parallel_calls=tf.data.AUTOTUNE)
        if shuffle:
            ds = ds.shuffle(10 * batch_size)
        return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    return prepare(train, True), prepare(test, False), info.features["label"].num_classes


def build_model(args, channels, classes):
    inputs = keras.Input((args.image_size, args.image_size, channels))
    x = keras.layers.Rescaling(1.0 / 127.5, offset=-1.0)(inputs)
    x = layers.PatchEmbedding(args.patch_size, args.width)(x)
    tokens = (args.image_size // args.patch_size) ** 2
    for index in range(args.depth):
        rate = args.drop_path_rate * index / max(1, args.depth - 1)
        x = layers.gMLPBlock(
            args.width, args.ffn_ratio * args.width, tokens, drop_path_rate=rate
        )(x)
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(classes, dtype="float32")(x)
    return keras.Model(inputs, outputs, name="gmlp_classifier")


def main(argv=None):
    args = parse_args(argv)
    if keras.backend.backend() == "jax":
        # Before the first computation: XLA's CPU runtime would otherwise
        # fault in its scratch buffer page by page on every training step.
        keras_gmlp.keep_freed_host_memory()
    keras.utils.set_random_seed(args.seed)
    if args.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")
    if args.dataset == "digits":
        train, test, classes = load_digits(args.image_size)
        fit_data = {"x": train[0], "y": train[1], "batch_size": args.batch_size}
        eval_data = {"x": test[0], "y": test[1], "batch_size": args.batch_size}
        channels = 1
    else:
        train_ds, test_ds, classes = load_tfds(
            args.dataset, args.data_dir, args.image_size, args.batch_size
        )
        fit_data, eval_data = {"x": train_ds}, {"x": test_ds}
        channels = train_ds.element_spec[0].shape[-1]
    model = build_model(args, channels, classes)
    model.compile(
        optimizer=keras.optimizers.AdamW(args.learning_rate, weight_decay=args.weight_decay),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    print(f"backend={keras.backend.backend()} parameters={model.count_params():,}")
    start = time.time()
    history = model.fit(**fit_data, epochs=args.epochs, verbose=2)
    loss, accuracy = model.evaluate(**eval_data, verbose=0)
    print(
        f"train loss {history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f}; "
        f"test loss {loss:.3f}, test accuracy {accuracy:.3f} "
        f"({time.time() - start:.0f} s)"
    )
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
