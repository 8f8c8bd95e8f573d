"""The fine-tuning program's examples: the task's sources ((texts, label)
examples of --train-files, --dataset or an offline task), packed by the
classifier's preprocessor, the held-out arrays and the train label
counts."""

from _text_input.sources import PARTS

from . import offline_tasks
from .recipe import TASKS


def example_source(description, make, examples=None):
    """A DocumentSource of (texts, label) examples: `texts` a tuple of one
    string (a sentence) or two (a pair)."""
    from _text_input.sources import DocumentSource

    return DocumentSource(description, make, examples)


def memory_task_sources(data, unit="paragraphs"):
    """Sources of the offline task's in-memory parts (`unit`: what one
    example is, for the descriptions)."""
    import tensorflow as tf

    def source(part):
        texts, labels = data[part]["texts"], data[part]["labels"]
        return example_source(
            f"{len(labels)} {part} {unit}",
            lambda: tf.data.Dataset.from_tensor_slices((tuple(texts), labels)),
            len(labels),
        )

    return {part: source(part) for part in PARTS}


def tfds_task(parser, args):
    """(sources, class names, split names) of --dataset, streamed."""
    import tensorflow as tf
    from _text_input import datasets
    from _text_input.sources import carve

    try:
        builder = datasets.tfds_builder(args.dataset, args.data_dir)
    except ValueError as error:
        parser.error(f"--dataset: {error}")
    features = builder.info.features
    label = features["label"] if "label" in features else None
    if label is None or not hasattr(label, "num_classes"):
        parser.error(f"--dataset {args.dataset} has no 'label' class feature")
    splits = set(builder.info.splits)
    if args.dataset in TASKS:
        columns, eval_split = TASKS[args.dataset]
    else:
        columns = tuple(datasets.text_features(builder))
        eval_split = next(
            (s for s in ("validation", "validation_matched", "test") if s in splits),
            None,
        )
        if not 1 <= len(columns) <= 2 or eval_split is None:
            parser.error(
                f"--dataset {args.dataset}: expected one or two text features and a "
                f"validation or test split; it has text features {list(columns)} and "
                f"splits {sorted(splits)}"
            )

    def source(split):
        def make():
            # GLUE's test splits are unlabelled (-1).
            examples = builder.as_dataset(split=split, shuffle_files=False)
            return examples.filter(lambda e: e["label"] >= 0).map(
                lambda e: (tuple(e[c] for c in columns), tf.cast(e["label"], "int32"))
            )

        return example_source(f"split {split!r}", make)

    sources = carve(source("train"), args.test_fraction, ("validation",))
    sources["test"] = source(eval_split)
    names = {part: sources[part].description for part in PARTS}
    names["test"] = eval_split
    return sources, list(label.names), names


def file_task(parser, args):
    """(sources, class names, split names) of --train-files (and
    --validation-files, --test-files), labelled by folder name."""
    import pathlib

    from _text_input import text_files
    from _text_input.sources import carve

    patterns = {
        part: getattr(args, f"{part}_files")
        for part in PARTS
        if getattr(args, f"{part}_files")
    }
    paths = {}
    for part, pattern in patterns.items():
        try:
            paths[part] = text_files.resolve_files(pattern)
            for path in paths[part]:
                text_files.check_text_file(path)
        except ValueError as error:
            parser.error(f"--{part}-files: {error}")
    class_names = sorted({pathlib.Path(p).parent.name for p in paths["train"]})
    if len(class_names) < 2:
        parser.error(
            f"--train-files: the files' folders name the classes; {patterns['train']!r} "
            f"gives {len(class_names)} ({class_names})"
        )
    for part, part_paths in paths.items():
        unknown = sorted(
            {pathlib.Path(p).parent.name for p in part_paths} - set(class_names)
        )
        if unknown:
            parser.error(f"--{part}-files: folders {unknown} are no train class")

    def source(part):
        return example_source(
            f"{len(paths[part])} files {patterns[part]}",
            lambda: text_files.labelled_file_documents(paths[part], class_names).map(
                lambda text, label: ((text,), label)
            ),
        )

    sources = {part: source(part) for part in paths}
    missing = tuple(part for part in ("test", "validation") if part not in sources)
    if missing:
        sources.update(carve(sources["train"], args.test_fraction, missing))
    return sources, class_names, {part: sources[part].description for part in PARTS}


def load_task(parser, args):
    """(sources, class names, split names, task name) of --train-files,
    --dataset or the offline task."""
    if args.train_files:
        return *file_task(parser, args), args.train_files
    if args.dataset:
        return *tfds_task(parser, args), args.dataset
    if args.offline_task != "package":
        same = args.offline_task.removeprefix("same-")
        data, class_names, names = offline_tasks.paragraph_pair_task(args, same)
        task_name = f"stdlib docstring paragraph pairs: same {same} or not"
        return memory_task_sources(data, "pairs"), class_names, names, task_name
    data, class_names, names = offline_tasks.offline_task(args)
    task_name = "stdlib docstring paragraphs: " + " / ".join(offline_tasks.PACKAGES)
    return memory_task_sources(data), class_names, names, task_name


def packed(preprocessor, examples):
    """`examples` ((texts, label)) through the classifier's preprocessor."""
    import tensorflow as tf

    def pack(texts, label):
        # By keyword: keras-hub reads a bare tuple as (x, y), not as the
        # two segments of a sentence pair.
        x = preprocessor(x=texts[0] if len(texts) == 1 else texts)
        # As the backbone's input takes it: a tf.distribute strategy
        # cannot all-reduce a bool padding mask.
        x["padding_mask"] = tf.cast(x["padding_mask"], "int32")
        return x, label

    return examples.map(pack)


def heldout_arrays(preprocessor, sources, args):
    """{"validation", "test"} -> (packed inputs, labels) as numpy, at most
    --eval-batches batches each; a part without an example is refused."""
    from _text_input.errors import refuse
    from _text_input.windows import take_arrays

    arrays = {}
    for part in PARTS[1:]:
        examples = packed(preprocessor, sources[part].dataset())
        arrays[part] = take_arrays(examples, args.eval_batches * args.batch_size)
        if arrays[part] is None:
            refuse(f"the {part} split ({sources[part].description}) has no examples")
    return arrays


def train_label_counts(source, num_classes):
    """How many train examples each class has (one pass over the labels)."""
    import numpy as np

    counts = np.zeros(num_classes, dtype="int64")
    labels = source.dataset().map(lambda texts, label: label).batch(4096)
    for batch in labels.as_numpy_iterator():
        counts += np.bincount(batch, minlength=num_classes)[:num_classes]
    return counts
