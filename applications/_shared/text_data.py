"""The text programs' tokenizers and tensorflow-datasets corpora.

The offline corpora, document splits, windows and masking are in
`keras_gmlp.utils.text_corpus`, which the MLM benchmark shares. TensorFlow
and keras-hub are imported when a function is called, after the flags have
been parsed.
"""

import os
import tempfile


def train_tokenizer(texts, vocabulary_size, lowercase=True):
    """A gMLPTokenizer whose WordPiece vocabulary is trained on `texts` (an
    iterable of strings, written to a file as it is read)."""
    import warnings

    from keras_gmlp.models import gMLPTokenizer

    with tempfile.TemporaryDirectory() as folder:
        # keras-hub's trainer streams a file line by line, faster than a
        # dataset of whole documents.
        path = os.path.join(folder, "corpus.txt")
        with open(path, "w", encoding="utf-8") as file:
            for text in texts:
                file.write(text + "\n")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tokenizer = gMLPTokenizer.from_corpus(
                [path], vocabulary_size=vocabulary_size, lowercase=lowercase
            )
    for warning in caught:
        # A small corpus gives fewer word pieces than asked: say it once.
        print(f"Note: {warning.message}")
    return tokenizer


def read_vocabulary(path):
    """The word pieces of a vocabulary file (UTF-8, one a line, BERT's
    vocab.txt), or a ValueError naming the file and what is wrong."""
    from keras_gmlp.models.gmlp.gmlp_tokenizer import SPECIAL_TOKENS

    try:
        with open(path, encoding="utf-8") as file:
            tokens = file.read().splitlines()
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text: invalid byte at offset {error.start}"
        ) from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read: {error.strerror}") from None
    if tokens and tokens[-1] == "":
        tokens.pop()
    for line, token in enumerate(tokens, start=1):
        if not token.strip() or token != token.strip() or " " in token:
            raise ValueError(
                f"{path} line {line}: expected one word piece a line, "
                f"received {token!r}"
            )
    seen = set()
    for line, token in enumerate(tokens, start=1):
        if token in seen:
            raise ValueError(f"{path} line {line}: {token!r} comes twice")
        seen.add(token)
    missing = [token for token in SPECIAL_TOKENS if token not in seen]
    if missing:
        raise ValueError(
            f"{path} lacks the special tokens {missing} (a BERT vocab.txt has "
            f"{list(SPECIAL_TOKENS)})"
        )
    return tokens


def tfds_builder(name, data_dir):
    """The tensorflow-datasets builder of `name`, or a ValueError saying
    why not (unknown name, or not prepared under `data_dir`)."""
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as error:  # tfds raises several kinds for bad names
        # The first line says why; the rest lists every dataset tfds has.
        reason = (
            str(error).strip().splitlines()[0]
            if str(error).strip()
            else type(error).__name__
        )
        raise ValueError(
            f"unknown tensorflow-datasets name {name!r}: {reason}"
        ) from None
    return builder


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
