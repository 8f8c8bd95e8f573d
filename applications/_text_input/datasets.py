"""tensorflow-datasets corpora: a builder by name, its text features, and
columns of a prepared split. tensorflow-datasets is imported when a function
is called, after the flags have been parsed.
"""


def tfds_builder(name, data_dir):
    """The tensorflow-datasets builder of `name`, or a ValueError saying
    why not (unknown name, or not prepared under `data_dir`)."""
    from _shared.tfds_names import checked_builder

    # The text programs read prepared data only: nothing is downloaded.
    return checked_builder(name, data_dir, will_download=False)


def text_features(builder):
    """Names of the string features of a tensorflow-datasets builder."""
    import tensorflow as tf
    import tensorflow_datasets as tfds

    names = []
    for name, feature in builder.info.features.items():
        if isinstance(feature, tfds.features.Text) or (
            isinstance(feature, tfds.features.Tensor) and feature.dtype == tf.string
        ):
            names.append(name)
    return names


def load_tfds_columns(builder, split, columns, limit=None):
    """The given features of a prepared split, as lists of Python values
    (strings decoded), at most `limit` examples."""
    import tensorflow_datasets as tfds

    dataset = builder.as_dataset(split=split, shuffle_files=False)
    if limit is not None:
        dataset = dataset.take(limit)
    values = {column: [] for column in columns}
    for example in tfds.as_numpy(dataset):
        for column in columns:
            value = example[column]
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            values[column].append(value)
    return values
