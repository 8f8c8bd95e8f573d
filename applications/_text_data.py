"""Text data the text programs share: the corpora every CPython carries,
document-level splits, a WordPiece vocabulary, windows of token ids,
masking, and tensorflow-datasets text features.

Only the standard library is imported at module level: `load_tfds` and the
tokenizer helpers import TensorFlow and keras-hub when called, after the
flags have been parsed. The corpora are read from files (nothing is
imported from the standard library's packages), so they are the same on
every backend and every run.
"""

import ast
import math
import os
import pathlib
import sysconfig
import tempfile

# BERT's special tokens come first in gMLPTokenizer's trained vocabularies:
# [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4.
FIRST_WORD_ID = 5


def reference_documents():
    """{topic: text} of the Python Language Reference in `pydoc_data`."""
    from pydoc_data import topics

    return {name: text for name, text in sorted(topics.topics.items())}


def stdlib_root():
    return pathlib.Path(sysconfig.get_paths()["stdlib"])


def stdlib_module_files(package=None):
    """The standard library's own `.py` files (no tests, no site-packages),
    as paths relative to the stdlib directory, sorted."""
    root = stdlib_root()
    start = root / package if package else root
    files = []
    for path in sorted(start.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        if parts[0] == "site-packages" or any(
            part.startswith("test") or part.endswith("_test") for part in parts
        ):
            continue
        files.append(relative)
    return files


def module_docstrings(relative_path):
    """The docstrings of a stdlib file (module, classes, functions), read
    with `ast`; [] if the file does not parse."""
    path = stdlib_root() / relative_path
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    texts = (ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, nodes))
    return [text for text in texts if text]


def module_source(relative_path):
    """The text of a stdlib file, or '' if it is not UTF-8."""
    try:
        return (stdlib_root() / relative_path).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""


def paragraphs(text, min_chars=40):
    """Blank-line separated paragraphs with their whitespace collapsed."""
    pieces = (" ".join(piece.split()) for piece in text.split("\n\n"))
    return [piece for piece in pieces if len(piece) >= min_chars]


def split_names(names, heldout_fraction, seed=0):
    """Splits document names into (train, held-out), at random but fixed
    by `seed`; at least one document on each side."""
    import numpy as np

    names = sorted(names)
    if len(names) < 2:
        raise ValueError(
            f"Need at least 2 documents to split into train and held-out; "
            f"received {len(names)}."
        )
    order = np.random.default_rng(seed).permutation(len(names))
    count = min(len(names) - 1, max(1, round(heldout_fraction * len(names))))
    heldout = sorted(names[i] for i in order[:count])
    train = sorted(names[i] for i in order[count:])
    return train, heldout


def train_tokenizer(texts, vocabulary_size, lowercase=True):
    """A gMLPTokenizer whose WordPiece vocabulary is trained on `texts`."""
    import warnings

    from keras_gmlp.models import gMLPTokenizer

    with tempfile.TemporaryDirectory() as folder:
        # keras-hub's trainer streams a file line by line, faster than a
        # dataset of whole documents.
        path = os.path.join(folder, "corpus.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(texts))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tokenizer = gMLPTokenizer.from_corpus(
                [path], vocabulary_size=vocabulary_size, lowercase=lowercase
            )
    for warning in caught:
        # A small corpus gives fewer word pieces than asked: say it once.
        print(f"Note: {warning.message}")
    return tokenizer


def tokenize(tokenizer, texts, chunk=2000):
    """Token ids of each text, as a list of int32 numpy arrays."""
    import numpy as np
    import tensorflow as tf

    token_lists = []
    for start in range(0, len(texts), chunk):
        # Outside tf.data, a batch comes back as a ragged tensor or lists.
        batch = tokenizer(tf.constant(list(texts[start : start + chunk])))
        if hasattr(batch, "to_list"):
            batch = batch.to_list()
        token_lists.extend(np.asarray(tokens, dtype="int32") for tokens in batch)
    return token_lists


def pack_windows(token_lists, length, start_id, end_id, min_tokens=8):
    """Cuts each document's tokens into rows `[start] tokens ... [end]` of
    `length` ids, padded with 0; windows never cross documents, and
    windows of fewer than `min_tokens` tokens are dropped. The end token
    is added only where a document ends."""
    import numpy as np

    body = length - 2
    rows = []
    for tokens in token_lists:
        for start in range(0, len(tokens), body):
            window = tokens[start : start + body]
            if len(window) < min_tokens:
                continue
            row = np.zeros(length, dtype="int32")
            row[0] = start_id
            row[1 : len(window) + 1] = window
            if start + body >= len(tokens):
                row[len(window) + 1] = end_id
            rows.append(row)
    if not rows:
        return np.zeros((0, length), dtype="int32")
    return np.stack(rows)


def mask_slots(sequence_length, mask_rate=0.15):
    """How many masked positions a row of `sequence_length` can have."""
    return int(math.ceil(mask_rate * (sequence_length - 2))) + 1


def mask_tokens(token_ids, rng, num_slots, mask_id, vocabulary_size, mask_rate=0.15):
    """BERT's masking, drawn from the numpy generator `rng`: `mask_rate` of
    each row's word pieces (ids >= FIRST_WORD_ID) are predicted; of those,
    80% become [MASK], 10% a random word piece and 10% stay. Returns the
    masked LM's inputs and the labels, 0 ([PAD]) in unused slots."""
    import numpy as np

    batch = token_ids.shape[0]
    inputs = token_ids.copy()
    positions = np.zeros((batch, num_slots), dtype="int32")
    labels = np.zeros((batch, num_slots), dtype="int32")
    for row in range(batch):
        candidates = np.flatnonzero(token_ids[row] >= FIRST_WORD_ID)
        if len(candidates) == 0:
            continue
        count = min(num_slots, max(1, int(round(mask_rate * len(candidates)))))
        chosen = np.sort(rng.choice(candidates, size=count, replace=False))
        positions[row, :count] = chosen
        labels[row, :count] = token_ids[row, chosen]
        action = rng.random(count)
        inputs[row, chosen[action < 0.8]] = mask_id
        swapped = chosen[(action >= 0.8) & (action < 0.9)]
        inputs[row, swapped] = rng.integers(
            FIRST_WORD_ID, vocabulary_size, size=len(swapped)
        )
    x = {
        "token_ids": inputs,
        "segment_ids": np.zeros_like(inputs),
        "padding_mask": (token_ids != 0).astype("int32"),
        "mask_positions": positions,
    }
    return x, labels


def masked_batches(token_ids, batch_size, seed, num_slots, mask_id, vocabulary_size):
    """A PyDataset of masked batches whose order and masks depend only on
    (seed, epoch, batch): each epoch masks the text afresh (dynamic
    masking, as RoBERTa), and a resumed run sees the same masks as an
    uninterrupted one."""
    import numpy as np
    from _training import EpochSeededBatches

    class MaskedBatches(EpochSeededBatches):
        def __getitem__(self, index):
            (rows,) = super().__getitem__(index)
            rng = np.random.default_rng([self.seed, self.epoch, index, 1])
            return mask_tokens(rows, rng, num_slots, mask_id, vocabulary_size)

    return MaskedBatches(token_ids, batch_size=batch_size, seed=seed)


def tfds_builder(name, data_dir):
    """The tensorflow-datasets builder of `name`, or a ValueError saying
    why not (unknown name, or not prepared under `data_dir`)."""
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as error:  # tfds raises several kinds for bad names
        # The first line says why; the rest lists every dataset tfds has.
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"unknown tensorflow-datasets name {name!r}: {reason}") from None
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
