"""Where the text programs' documents come from: the bundled corpus, a
tensorflow-datasets corpus or local text files (`text_files`), split into
train, validation and test, each part a `DocumentSource` that streams its
documents.

A corpus without a validation or test split gives them from its train
documents by position: with a held-out fraction f, every round(1/f)-th
document is a test document and the one after it a validation document,
so the split needs no pass over the corpus and no document is in two
parts. Bundled documents ({name: text}) are split by name
(`split_documents`).
"""

from keras_gmlp.utils import text_corpus

from . import text_files

PARTS = ("train", "validation", "test")


class DocumentSource:
    """One part of a corpus: `dataset()` streams its documents (strings)
    afresh; `documents` counts them where they are in memory, else None."""

    def __init__(self, description, make, documents=None):
        self.description = description
        self.make = make
        self.documents = documents

    def dataset(self):
        return self.make()


def memory_sources(parts):
    """Sources of in-memory documents ({part: {name: text}})."""
    import tensorflow as tf

    def source(part):
        texts = list(parts[part].values())
        return DocumentSource(
            f"{len(texts)} {part} documents",
            lambda: tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string)),
            len(texts),
        )

    return {part: source(part) for part in PARTS}


def carve(source, fraction, heldout=("test", "validation")):
    """Sources of the `heldout` parts and "train" of one `source`, by
    position: of every round(1/fraction) documents, the first goes to the
    first held-out part, the second to the second, the rest to train."""
    import tensorflow as tf

    every = max(len(heldout) + 1, round(1 / fraction))
    kept = {name: (i, i + 1) for i, name in enumerate(heldout)}
    kept["train"] = (len(heldout), every)

    def part(name):
        low, high = kept[name]

        def make():
            def keep(index, _):
                position = index % every
                return tf.logical_and(position >= low, position < high)

            return source.dataset().enumerate().filter(keep).map(lambda _, text: text)

        share = f"{high - low} in {every}"
        return DocumentSource(f"{source.description}, {share} documents", make)

    return {name: part(name) for name in kept}


def file_source(pattern):
    """The documents of the files matching `pattern`, checked (a ValueError
    says why not)."""
    paths = text_files.resolve_files(pattern)
    for path in paths:
        text_files.check_text_file(path)
    return DocumentSource(
        f"{len(paths)} files {pattern}", lambda: text_files.file_documents(paths)
    )


def file_sources(args, fraction):
    """--train-files, --validation-files and --test-files as sources; the
    parts not given are carved from the train files. Raises a ValueError
    naming the flag of a bad glob or file."""
    given = {}
    for part in PARTS:
        pattern = getattr(args, f"{part}_files")
        if pattern is not None:
            try:
                given[part] = file_source(pattern)
            except ValueError as error:
                raise ValueError(f"--{part}-files: {error}") from None
    missing = tuple(part for part in ("test", "validation") if part not in given)
    return {**given, **carve(given["train"], fraction, missing)} if missing else given


def tfds_sources(builder, feature, fraction):
    """Sources of a tensorflow-datasets corpus' `feature`, streamed: its
    train split, and its validation and test splits where it has them (one
    held-out split is the test split), the rest carved from train (which
    then keeps the rest)."""
    import tensorflow as tf

    def source(split):
        def make():
            dataset = builder.as_dataset(split=split, shuffle_files=False)
            return dataset.map(
                lambda example: tf.cast(example[feature], tf.string),
                num_parallel_calls=tf.data.AUTOTUNE,
            )

        try:
            size = builder.info.splits[split].num_examples
        except (KeyError, ValueError):  # not prepared (tfds' mock data)
            size = None
        return DocumentSource(f"split {split!r}", make, size)

    splits = set(builder.info.splits)
    sources = {"train": source("train")}
    if "test" in splits:
        sources["test"] = source("test")
        if "validation" in splits:
            sources["validation"] = source("validation")
    elif "validation" in splits:
        sources["test"] = source("validation")
    if len(sources) == 3:
        return sources
    missing = tuple(part for part in ("test", "validation") if part not in sources)
    return {**sources, **carve(sources["train"], fraction, missing)}


def split_documents(documents, heldout_fraction, limit=None):
    """{"train", "validation", "test"} -> {name: text}, split by document:
    the validation and the test set each hold `heldout_fraction` of the
    documents; only the first `limit` names (sorted) when given."""
    if limit is not None:
        names = sorted(documents)[:limit]
        documents = {name: documents[name] for name in names}
    rest, test = text_corpus.split_names(documents, heldout_fraction)
    parts = carve_validation({name: documents[name] for name in rest}, heldout_fraction)
    return {**parts, "test": {name: documents[name] for name in test}}


def carve_validation(documents, fraction):
    """{"train", "validation"} -> {name: text}: `fraction` of all the
    documents (`documents` and a test set of that share) for validation."""
    share = min(0.5, fraction / (1.0 - fraction))
    train, validation = text_corpus.split_names(documents, share, seed=1)
    return {
        "train": {name: documents[name] for name in train},
        "validation": {name: documents[name] for name in validation},
    }
