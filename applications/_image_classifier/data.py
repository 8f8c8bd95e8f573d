"""The image program's data: scikit-learn's digits offline, or a
tensorflow-datasets image-classification dataset, as batches of raw pixels
in [0, 255] and one-hot labels, with Keras' augmentation layers."""

import math

FAST_DIGITS = 200  # images of the digits data used by --fast

# tensorflow-datasets datasets whose "test" labels are withheld (all -1).
UNLABELLED_TEST = ("imagenet2012", "imagenet2012_subset")


def load_digits(image_size, fast):
    """scikit-learn's 1,797 8x8 digits at `image_size` (nearest neighbour),
    as raw pixels in [0, 255], in a fixed order split 70/10/20 into train,
    validation (chooses the best epoch) and test (scored once, at the end)."""
    import numpy as np
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    if fast:
        order = order[:FAST_DIGITS]
    source = np.arange(image_size) * 8 // image_size
    images = digits.images[order][:, source][:, :, source]
    images = (images * (255.0 / 16.0)).astype("float32")[..., None]
    labels = digits.target[order].astype("int32")
    ends = {"train": int(0.7 * len(labels)), "validation": int(0.8 * len(labels))}
    bounds = {
        "train": (0, ends["train"]),
        "validation": (ends["train"], ends["validation"]),
        "test": (ends["validation"], len(labels)),
    }
    names = {"train": "digits[:70%]", "validation": "digits[70%:80%]"}
    names["test"] = "digits[80%:]"
    data = {"classes": 10, "channels": 1}
    for part, (start, stop) in bounds.items():
        data[part] = (images[start:stop], labels[start:stop])
        data[f"{part}_split"] = names[part]
    return data


def tfds_builder(parser, args):
    """The dataset's builder, or a flag error if tensorflow-datasets does not
    know the name or it is not an image-classification dataset."""
    import tensorflow_datasets as tfds
    from _shared.tfds_names import checked_builder

    try:
        builder = checked_builder(args.dataset, args.data_dir, will_download=True)
    except ValueError as error:
        parser.error(f"--dataset {args.dataset}: {error} (or 'digits', bundled)")
    info = builder.info
    keys = info.supervised_keys
    features = info.features
    if not (
        isinstance(keys, tuple)
        and len(keys) == 2
        and isinstance(features[keys[0]], tfds.features.Image)
        and isinstance(features[keys[1]], tfds.features.ClassLabel)
    ):
        parser.error(
            f"--dataset {args.dataset} is not an image-classification dataset "
            f"(its supervised keys are {keys}, expected (image, class label))"
        )
    return builder


def choose_splits(name, known_splits):
    """(train, validation, test) split names. The test split is "test", or
    "validation" where the test labels are withheld or there is no "test";
    the validation split is "validation" when that is not the test split,
    else the last tenth of "train" (hundredth for ImageNet). Without either,
    train is cut 80/10/10. `known_splits` is empty when tensorflow-datasets
    does not list them."""
    base = name.split(":")[0].split("/")[0]
    unlabelled_test = base in UNLABELLED_TEST
    if not known_splits:
        known_splits = ("validation",) if unlabelled_test else ("test",)
    test = "test" if "test" in known_splits and not unlabelled_test else None
    if test is None and "validation" in known_splits:
        test = "validation"
    if test is None:
        return "train[:80%]", "train[80%:90%]", "train[90%:]"
    if test != "validation" and "validation" in known_splits:
        return "train", "validation", test
    cut = 99 if unlabelled_test else 90
    return f"train[:{cut}%]", f"train[{cut}%:]", test


def parallel_calls():
    """The parallelism of the tf.data maps: AUTOTUNE, but none on the
    TensorFlow backend. That runs with op determinism
    (training.prepare_backend), under which TensorFlow rewrites a parallel
    map into a sequential one anyway, and logs an error-level "NodeDef
    mentions attribute use_unbounded_threadpool" line as it does: the
    rewrite keeps an attribute of the parallel op that the sequential op
    does not have."""
    import keras
    import tensorflow as tf

    return None if keras.backend.backend() == "tensorflow" else tf.data.AUTOTUNE


def load_tfds(builder, args, channels):
    """tf.data pipelines of (raw pixels at --image-size, integer label)."""
    import tensorflow as tf

    builder.download_and_prepare()
    info = builder.info
    split_names = choose_splits(args.dataset, dict(info.splits))
    image_key, label_key = info.supervised_keys
    source_channels = info.features[image_key].shape[-1]

    def prepare(example_image, label):
        image = tf.cast(example_image, "float32")
        image = tf.image.resize(image, (args.image_size, args.image_size))
        if source_channels == 1 and channels == 3:
            image = tf.image.grayscale_to_rgb(image)
        return image, tf.cast(label, "int32")

    def read(split):
        dataset = builder.as_dataset(split=split, as_supervised=True)
        if args.fast:
            dataset = dataset.take(64 if split == split_names[0] else 32)
        return dataset.map(prepare, num_parallel_calls=parallel_calls())

    def count(split, dataset):
        try:
            if not args.fast:
                return info.splits[split].num_examples
        except (KeyError, TypeError):
            pass
        return int(dataset.reduce(0, lambda n, _: n + 1))

    data = {
        "classes": info.features[label_key].num_classes,
        "channels": channels,
        "source_channels": source_channels,
    }
    for part, split in zip(("train", "validation", "test"), split_names):
        data[part] = read(split)
        data[f"{part}_size"] = count(split, data[part])
        data[f"{part}_split"] = split
    return data


def make_augmentation(args, seed):
    """Keras' augmentation layers for the flags: (image layers, a function of
    (images, one-hot labels) batches that applies MixUp or CutMix)."""
    import keras

    # Pixels and labels stay float32 under --mixed-precision: the model
    # casts its inputs itself.
    float32 = {"dtype": "float32"}
    image_layers = []
    if args.random_resized_crop:
        zoom = (-args.random_resized_crop, 0.0)
        image_layers += [
            keras.layers.RandomZoom(zoom, zoom, seed=seed, **float32),
            keras.layers.RandomTranslation(0.1, 0.1, seed=seed + 1, **float32),
        ]
    if args.flip:
        image_layers.append(
            keras.layers.RandomFlip("horizontal", seed=seed + 2, **float32)
        )
    if args.randaugment:
        image_layers.append(
            keras.layers.RandAugment(
                value_range=(0, 255),
                num_ops=args.randaugment,
                factor=args.randaugment_magnitude,
                seed=seed + 3,
                **float32,
            )
        )
    mixers = []
    if args.mixup:
        mixers.append(keras.layers.MixUp(alpha=args.mixup, seed=seed + 4, **float32))
    if args.cutmix:
        mixers.append(keras.layers.CutMix(factor=args.cutmix, seed=seed + 5, **float32))
    return image_layers, mixers


def tf_augment(image_layers, mixers):
    """A tf.data map function of (images, one-hot labels) batches: the image
    layers, then MixUp or CutMix (each on half the batches when both are on,
    DeiT's switch)."""
    import tensorflow as tf

    def mix(layer, images, labels):
        mixed = layer({"images": images, "labels": labels})
        return mixed["images"], mixed["labels"]

    def augment(images, labels):
        for layer in image_layers:
            images = layer(images, training=True)
        if len(mixers) == 1:
            return mix(mixers[0], images, labels)
        if mixers:
            return tf.cond(
                tf.random.uniform(()) < 0.5,
                lambda: mix(mixers[0], images, labels),
                lambda: mix(mixers[1], images, labels),
            )
        return images, labels

    return augment


def make_digits_batches(args, data, image_layers, mixers, classes):
    """(batches, what to fit on): batches in an order fixed by (seed,
    epoch); augmented in a tf.data pipeline (graph mode, fast on every
    backend) when augmentation is on."""
    import numpy as np
    from _shared.batches import EpochSeededBatches

    images, labels = data["train"]
    batches = EpochSeededBatches(
        images,
        np.eye(classes, dtype="float32")[labels],
        batch_size=args.batch_size,
        seed=args.seed,
        share=(args.process_id, args.num_processes),
    )
    if not (image_layers or mixers):
        return batches, batches
    import tensorflow as tf

    def generate():
        # Called once per epoch, after the epoch callback set the epoch.
        for index in range(len(batches)):
            yield batches[index]

    signature = (
        tf.TensorSpec((None,) + images.shape[1:], "float32"),
        tf.TensorSpec((None, classes), "float32"),
    )
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    # Tells fit the epoch length, which a generator does not.
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(len(batches)))
    dataset = dataset.map(tf_augment(image_layers, mixers))
    return batches, dataset.prefetch(tf.data.AUTOTUNE)


def make_tfds_batches(args, data, image_layers, mixers, classes):
    """(train, validation, test) tf.data pipelines of batches."""
    import tensorflow as tf

    def one_hot(images, labels):
        return images, tf.one_hot(labels, classes)

    train = (
        data["train"]
        .shuffle(min(data["train_size"], 10_000), seed=args.seed)
        .batch(args.batch_size)
        .map(one_hot)
    )
    if image_layers or mixers:
        train = train.map(
            tf_augment(image_layers, mixers), num_parallel_calls=parallel_calls()
        )
    validation, test = (
        data[part].batch(args.batch_size).map(one_hot).prefetch(tf.data.AUTOTUNE)
        for part in ("validation", "test")
    )
    return train.prefetch(tf.data.AUTOTUNE), validation, test


def load_data(parser, args, builder, state):
    """(data, channels): the digits (builder None) or the tensorflow-datasets
    splits, with as many channels as the --weights' stem takes (grey images
    are repeated for an RGB checkpoint); a mismatch is a flag error."""
    import numpy as np

    if builder is None:
        data = load_digits(args.image_size, args.fast)
        data_channels = data["channels"]
    else:
        data_channels = builder.info.features[builder.info.supervised_keys[0]].shape[-1]
    channels = data_channels
    if state is not None:
        channels = int(state["stem.proj.weight"].shape[1])
        if channels != data_channels and not (data_channels == 1 and channels == 3):
            parser.error(
                f"--weights {args.weights} expects {channels}-channel images; "
                f"--dataset {args.dataset} has {data_channels}"
            )
    if builder is not None:
        data = load_tfds(builder, args, channels)
    elif channels == 3:
        # Grey digits for an RGB checkpoint.
        for part in ("train", "validation", "test"):
            images, labels = data[part]
            data[part] = (np.repeat(images, 3, -1), labels)
    return data, channels


def training_batches(args, data, in_memory):
    """What `fit` trains and validates on, the test data, and the sizes the
    report gives; `in_memory` for the digits' arrays, else tf.data
    pipelines."""
    import numpy as np

    classes = data["classes"]
    image_layers, mixers = make_augmentation(args, args.seed)
    if not in_memory:
        train, validation, test = make_tfds_batches(
            args, data, image_layers, mixers, classes
        )
        return {
            "in_memory": False,
            "train": train,
            "validation": validation,
            "test": test,
            "epoch_callback": None,
            "steps_per_epoch": math.ceil(data["train_size"] / args.batch_size),
            **{f"{p}_size": data[f"{p}_size"] for p in ("train", "validation", "test")},
        }
    batches, train = make_digits_batches(args, data, image_layers, mixers, classes)
    (validation_images, validation_labels), (test_images, test_labels) = (
        data["validation"],
        data["test"],
    )
    return {
        "in_memory": True,
        "train": train,
        "validation": (validation_images, np.eye(classes)[validation_labels]),
        "test": (test_images, np.eye(classes)[test_labels]),
        "test_labels": test_labels,
        "epoch_callback": batches.epoch_callback(),
        "steps_per_epoch": len(batches),
        "train_size": len(data["train"][1]),
        "validation_size": len(validation_labels),
        "test_size": len(test_labels),
    }
