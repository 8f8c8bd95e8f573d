"""Fine-tunes a pretrained gMLP or aMLP preset as a text classifier.

It starts from a keras-hub preset directory, by default the one
applications/pretrain_mlm.py writes (outputs/pretrain_mlm/final_preset):
the encoder and its vocabulary are loaded and a classification head is put
on the mean of the encoder's outputs.

The offline default task: which standard-library package (asyncio, email,
importlib or xml) does a docstring paragraph come from? The paragraphs are
read from the .py files of the CPython install, split by module file into
train, validation and test (no file gives paragraphs to two of them), and
each class is cut to the same number of paragraphs, so guessing the
majority class scores 25%. The validation accuracy chooses the best epoch
(and, with --patience, stops training); the test accuracy of that model is
reported once, next to the majority-class baseline.

--offline-task same-module is the offline sentence-pair task: do two
paragraphs come from the same module file? The pairs are [CLS] first
[SEP] second [SEP], half from one file, half from two files of the same
package (so the package alone does not tell), drawn within each split's
module files, the same files as the single-paragraph task; guessing scores
50%. --offline-task same-package asks the same of packages: half the
pairs from one package, half from two, so a pair is told by comparing
its two paragraphs, as the single-paragraph task's package signal lets
a model do. --pairs-per-paragraph k starts k pairs from each paragraph,
"same" and "other" in turn (k times the examples). The paper found gMLP
behind BERT on sentence pairs and a tiny attention closing the gap (aMLP).

--dataset takes a tensorflow-datasets classification task prepared under
--data-dir: glue/sst2 (single sentences), glue/mnli (sentence pairs,
scored on validation_matched), glue/qnli, glue/rte, imdb_reviews,
ag_news_subset, or any dataset with one or two text features and a
"label" ClassLabel, read as a stream. The split named above is the test
split (GLUE's test labels are withheld); a --test-fraction of
"train" validates (every round(1/f)-th example, by position). --train-files reads local text files instead, each
document labelled by the name of its file's folder (as Keras'
text_dataset_from_directory labels files: 'reviews/train/pos/*.txt');
--validation-files and --test-files likewise, or carved from the train
files by position. Validation and test score at most --eval-batches
batches.

Training counts steps: --steps, or --epochs passes over the train examples
(one counting pass first), with a checkpoint every --save-every steps that
a rerun resumes from, input position included.

Outputs in --output-dir: best_preset/ (highest validation accuracy) and
final_preset/, history.csv, training_curves.png, confusion_matrix.png
(test), summary.json (which split is which) and run_state.json.

    python applications/pretrain_mlm.py                  # makes the preset
    python applications/finetune_text_classifier.py
    python applications/finetune_text_classifier.py --dataset glue/mnli --data-dir ~/tensorflow_datasets
    python applications/finetune_text_classifier.py --train-files 'reviews/train/*/*.txt' --steps 2000
"""

import pathlib
import time

from _shared.flag_values import fraction
from _shared.flag_values import non_negative_float
from _shared.flag_values import positive_float
from _shared.flag_values import positive_int
from _shared.flag_values import unit_float
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _text_input.flags import add_text_file_flags
from _text_input.flags import check_text_file_flags
from _text_training.flags import STEP_RUN_FLAGS
from _text_training.flags import add_step_flags
from _text_training.flags import check_step_flags

DEFAULT_PRESET = "outputs/pretrain_mlm/final_preset"
# The offline task's classes: standard-library packages with many
# documented modules each.
PACKAGES = ("asyncio", "email", "importlib", "xml")
# tensorflow-datasets tasks: (text features, split to score on).
TASKS = {
    "glue/sst2": (("sentence",), "validation"),
    "glue/cola": (("sentence",), "validation"),
    "glue/mnli": (("premise", "hypothesis"), "validation_matched"),
    "glue/qnli": (("question", "sentence"), "validation"),
    "glue/rte": (("sentence1", "sentence2"), "validation"),
    "glue/mrpc": (("sentence1", "sentence2"), "validation"),
    "imdb_reviews": (("text",), "test"),
    "ag_news_subset": (("description",), "test"),
}
FAST_EXAMPLES = {"train": 24, "validation": 12, "test": 12}
PARTS = ("train", "validation", "test")
OFFLINE_TASKS = ("package", "same-module", "same-package")
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "preset",
    "dataset",
    "dropout",
    "lora_rank",
    "offline_task",
    "pairs_per_paragraph",
    "test_fraction",
    "fast",
    *STEP_RUN_FLAGS,
)


def add_task_flags(parser):
    """The flags that choose the task and its splits."""
    parser.add_argument(
        "--dataset",
        help="a tensorflow-datasets task instead of the offline one, "
        f"e.g. {', '.join(TASKS)}",
    )
    parser.add_argument(
        "--data-dir", help="where tensorflow-datasets keeps prepared datasets"
    )
    parser.add_argument(
        "--offline-task",
        choices=OFFLINE_TASKS,
        default=OFFLINE_TASKS[0],
        help="the offline task: which package a paragraph comes from, or "
        "whether two paragraphs come from the same module file or package "
        "(sentence pairs)",
    )
    parser.add_argument(
        "--pairs-per-paragraph",
        type=positive_int,
        default=1,
        help="the pair tasks' pairs per first paragraph, 'same' and 'other' "
        "in turn, each with another second paragraph while one is left",
    )
    parser.add_argument(
        "--test-fraction",
        type=fraction,
        default=0.25,
        help="share of paragraphs held out for test in the offline task (half "
        "as many validate; whole module files); share of --dataset's train "
        "examples kept for validation",
    )


def parse_args(argv=None):
    parser = make_parser(__doc__, "outputs/finetune_text_classifier")
    parser.set_defaults(epochs=6, batch_size=32)
    parser.add_argument(
        "--preset",
        default=DEFAULT_PRESET,
        help="the pretrained preset directory to start from",
    )
    add_task_flags(parser)
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        default=5e-4,
        help="peak AdamW learning rate (linear warm-up, cosine decay)",
    )
    parser.add_argument(
        "--weight-decay",
        type=non_negative_float,
        default=0.01,
        help="AdamW weight decay",
    )
    parser.add_argument(
        "--dropout", type=unit_float, default=0.1, help="dropout on the pooled output"
    )
    parser.add_argument(
        "--lora-rank",
        type=positive_int,
        help="fine-tune LoRA factors of this rank on the encoder's channel "
        "projections (backbone.enable_lora) and the head, the other encoder "
        "weights frozen (default: every weight trains)",
    )
    add_text_file_flags(parser, with_vocabulary=False)
    add_step_flags(parser)
    args = parser.parse_args(argv)
    if args.fast and not flag_given(argv, "--epochs"):
        args.epochs = 1
    if args.data_dir and not args.dataset:
        parser.error("--data-dir needs --dataset")
    check_text_file_flags(parser, args)
    check_step_flags(parser, args, argv)
    args.preset = checked_preset(parser, args.preset)
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args


def checked_preset(parser, path):
    """The --preset directory, or a usage error saying how to make one."""
    preset = pathlib.Path(path).expanduser()
    if not (preset / "config.json").is_file():
        made_by = "python applications/pretrain_mlm.py"
        if preset.name in ("final_preset", "best_preset"):
            made_by += f" --output-dir {preset.parent}"
        state = (
            "does not exist"
            if not preset.exists()
            else "holds no preset (no config.json)"
        )
        parser.error(
            f"--preset {preset} {state}. Make it first with: {made_by}  "
            "(or pass --preset DIR of another gMLP/aMLP preset)"
        )
    return preset


def package_split(package, rng, fraction):
    """{"train", "validation", "test"} -> (paragraphs, module files) of one
    package (`package_files`)."""
    return {
        part: ([t for name in sorted(files) for t in files[name]], sorted(files))
        for part, files in package_files(package, rng, fraction).items()
    }


def package_files(package, rng, fraction):
    """{"train", "validation", "test"} -> {module file: paragraphs} of one
    package: whole files, in a fixed random order, go to the test set until
    it holds about `fraction` of the package's paragraphs, and to the
    validation set until it holds about half that; the rest to train."""
    from keras_gmlp.utils import text_corpus

    files = [
        name
        for name in text_corpus.stdlib_module_files(package)
        if text_corpus.module_docstrings(name)
    ]
    texts_of = {
        name: [
            paragraph
            for docstring in text_corpus.module_docstrings(name)
            for paragraph in text_corpus.paragraphs(docstring)
        ]
        for name in files
    }
    order = [files[i] for i in rng.permutation(len(files))]
    total = sum(len(texts) for texts in texts_of.values())
    # A file goes to the first held-out part it fits in: below its share,
    # and not past one and a half times it (the train part keeps the rest).
    targets = {"test": fraction * total, "validation": fraction / 2 * total}
    chosen = {"test": [], "validation": [], "train": []}
    counts = dict.fromkeys(targets, 0)
    for name in order:
        size = len(texts_of[name])
        part = next(
            (
                part
                for part, target in targets.items()
                if counts[part] < target and counts[part] + size <= 1.5 * target
            ),
            "train",
        )
        if part != "train":
            counts[part] += size
        chosen[part].append(name)
    if not chosen["train"]:  # too few files: the last one trains
        chosen["train"].append((chosen["validation"] or chosen["test"]).pop())
    return {
        part: {name: texts_of[name] for name in names} for part, names in chosen.items()
    }


def offline_task(args):
    """({"train", "validation", "test"} -> data, class names, split names):
    each data dict has "texts" (a tuple of one list), "labels" and the
    module "files" they come from; no file gives paragraphs to two parts."""
    import numpy as np

    rng = np.random.default_rng(0)
    split = {part: [] for part in PARTS}
    for label, package in enumerate(PACKAGES):
        for part, (texts, names) in package_split(
            package, rng, args.test_fraction
        ).items():
            split[part].append((label, texts, names))
    data = {}
    for part in PARTS:
        classes = split[part]
        # Equal counts per class, drawn at random but fixed.
        size = min(len(texts) for _, texts, _ in classes)
        if args.fast:
            size = min(size, FAST_EXAMPLES[part])
        texts, labels, files = [], [], []
        for label, class_texts, names in classes:
            chosen = sorted(rng.choice(len(class_texts), size=size, replace=False))
            texts += [class_texts[i] for i in chosen]
            labels += [label] * size
            files += names
        data[part] = {
            "texts": (texts,),
            "labels": np.array(labels, dtype="int32"),
            "files": files,
        }
    names = {part: f"{part} module files" for part in PARTS}
    return data, list(PACKAGES), names


def module_pair_task(args):
    """--offline-task same-module: label 1 for two paragraphs of one module
    file, 0 for two files of one package (`paragraph_pair_task`)."""
    return paragraph_pair_task(args, "module")


def package_pair_task(args):
    """--offline-task same-package: label 1 for two paragraphs of one
    package, 0 for two packages (`paragraph_pair_task`)."""
    return paragraph_pair_task(args, "package")


def paragraph_pair_task(args, same):
    """An offline sentence-pair task, as `offline_task` returns it: each
    part's pairs come from its own module files (`package_files`),
    `args.pairs_per_paragraph` pairs starting from each paragraph of the
    files `paired_files` keeps, balanced; label 1 for
    two paragraphs that share a `same` ("module" file or "package"), 0 for
    two from the next level up (two files of one package, or two
    packages), so the level above alone does not tell."""
    import numpy as np

    rng = np.random.default_rng(0)
    packages = {part: [] for part in PARTS}
    for package in PACKAGES:
        for part, files in package_files(package, rng, args.test_fraction).items():
            packages[part].append(files)
    data = {}
    for part in PARTS:
        kept = paired_files(packages[part], same)
        texts = [list(files.values()) for files in kept]
        places = [(p, f, i) for p, files in enumerate(texts)
                  for f, paragraphs in enumerate(files) for i in range(len(paragraphs))]  # fmt: skip
        starts = [places[i] for i in rng.permutation(len(places))]
        if args.fast:
            starts = starts[: FAST_EXAMPLES[part]]
        pairs, labels = [], []
        for number, start in enumerate(starts):
            partners = {0: [], 1: []}
            for place in places:
                if (label := _pairs(start, place, same)) is not None:
                    partners[label].append(place)
            unused = {0: [], 1: []}
            # Each paragraph starts k pairs, "same" and "other" in turn.
            for label in ((number + j) % 2 for j in range(args.pairs_per_paragraph)):
                # A new partner each time while one is left.
                unused[label] = unused[label] or list(partners[label])
                p, f, i = unused[label].pop(rng.integers(len(unused[label])))
                pairs.append((texts[start[0]][start[1]][start[2]], texts[p][f][i]))
                labels.append(label)
        if args.fast:
            pairs, labels = pairs[: FAST_EXAMPLES[part]], labels[: FAST_EXAMPLES[part]]
        data[part] = {
            "texts": tuple(map(list, zip(*pairs))),
            "labels": np.array(labels, dtype="int32"),
            "files": sorted(name for files in kept for name in files),
        }
    names = {part: f"pairs from {part} module files" for part in PARTS}
    return data, [f"other {same}", f"same {same}"], names


def _pairs(start, place, same):
    """1 if the paragraphs at (package, file, paragraph) `start` and `place`
    make a "same" pair, 0 if an "other" pair, None if neither."""
    same_package, same_file = start[0] == place[0], start[:2] == place[:2]
    if start == place or (same == "module" and not same_package):
        return None
    return int(same_file if same == "module" else same_package)


def paired_files(packages, same="module"):
    """Per package ({module file: paragraphs}), its files' paragraphs that
    no other file holds (a docstring repeated in two files would make a
    pair "other module" or "other package" that one file holds). For
    `same="module"`, files left with two or more paragraphs in packages
    left with two or more such files; for "package", packages left with
    two or more paragraphs."""
    import collections

    counts = collections.Counter(
        text for files in packages for texts in files.values() for text in set(texts)
    )
    fewest = 2 if same == "module" else 1
    kept = []
    for files in packages:
        # Once each: a paragraph twice in one file would pair with itself.
        unique = {
            name: list(dict.fromkeys(t for t in texts if counts[t] == 1))
            for name, texts in files.items()
        }
        unique = {name: texts for name, texts in unique.items() if len(texts) >= fewest}
        if (len(unique) if same == "module" else sum(map(len, unique.values()))) > 1:
            kept.append(unique)
    return kept


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


def plot_confusion_matrix(labels, predictions, class_names, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import save_figure

    k = len(class_names)
    matrix = np.zeros((k, k), dtype=int)
    np.add.at(matrix, (labels, predictions), 1)
    figure, axis = plt.subplots(figsize=(1.2 * k + 3, 1.1 * k + 2.5))
    image = axis.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axis, label="examples")
    axis.set_xticks(range(k), class_names, rotation=45, ha="right")
    axis.set_yticks(range(k), class_names)
    axis.set_xlabel("predicted")
    axis.set_ylabel("true")
    for i in range(k):
        for j in range(k):
            axis.text(
                j,
                i,
                matrix[i, j],
                ha="center",
                va="center",
                color="white" if matrix[i, j] > matrix.max() / 2 else "black",
            )
    axis.set_title("Confusion matrix (test)")
    figure.tight_layout()
    save_figure(figure, path)


def train_classifier(args, run, classifier, train_source, validation):
    """Fits `classifier` on the streamed train examples, choosing the
    checkpoint on the packed `validation` data; returns (trainer,
    history)."""
    import keras
    from _text_training.training import fit_task
    from _text_training.training import training_stream

    stream = training_stream(
        args,
        train_source.dataset(),
        lambda examples: packed(classifier.preprocessor, examples),
    )
    compile_args = {
        "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        "metrics": ["accuracy"],
    }
    return fit_task(
        classifier,
        stream,
        validation,
        args,
        run,
        compile_args,
        monitor="val_accuracy",
        mode="max",
    )


def load_task(parser, args):
    """(sources, class names, split names, task name) of --train-files,
    --dataset or the offline task."""
    if args.train_files:
        return *file_task(parser, args), args.train_files
    if args.dataset:
        return *tfds_task(parser, args), args.dataset
    if args.offline_task != "package":
        same = args.offline_task.removeprefix("same-")
        data, class_names, names = paragraph_pair_task(args, same)
        task_name = f"stdlib docstring paragraph pairs: same {same} or not"
        return memory_task_sources(data, "pairs"), class_names, names, task_name
    data, class_names, names = offline_task(args)
    task_name = "stdlib docstring paragraphs: " + " / ".join(PACKAGES)
    return memory_task_sources(data), class_names, names, task_name


def load_classifier(args, num_classes):
    """A classifier over the --preset encoder, or one line on why not."""
    from keras_gmlp.models import gMLPTextClassifier

    try:
        classifier = gMLPTextClassifier.from_preset(
            str(args.preset), num_classes=num_classes, dropout=args.dropout
        )
    except Exception as error:
        raise SystemExit(
            f"--preset {args.preset} could not be loaded as a gMLP encoder: {error}"
        ) from None
    if args.lora_rank:
        classifier.backbone.enable_lora(args.lora_rank)
    return classifier


def print_task(task, heldout):
    def size(part):
        description = task["sources"][part].description
        if part in heldout:
            return f"{len(heldout[part][1])} {part} ({description})"
        return f"{int(task['counts'].sum())} {part} ({description})"

    classes = task["classes"]
    print(
        f"Task: {task['name']}; examples: {', '.join(size(p) for p in PARTS)}; "
        f"{len(classes)} classes; always guessing the most common train class "
        f"({classes[task['majority']]}) scores {task['majority_accuracy']:.4f} on test.",
        flush=True,
    )


def test_and_plot(args, trainer, test, class_names):
    """Scores the chosen weights once on the packed test split and draws its
    confusion matrix; returns the test accuracy."""
    import numpy as np

    test_x, test_y = test
    logits = trainer.predict(test_x, batch_size=256, verbose=0)
    predictions = np.argmax(logits, axis=-1)
    plot_confusion_matrix(
        test_y, predictions, class_names, args.output_dir / "confusion_matrix.png"
    )
    return float(np.mean(predictions == test_y))


def prepare(parser, args):
    """The task, the classifier and the held-out arrays, with the
    majority-class baseline; fills in the step flags. Refusals come before
    training."""
    import keras
    import numpy as np
    from _text_input.errors import refuse
    from _text_training.training import resolve_steps

    sources, class_names, names, task_name = load_task(parser, args)
    keras.utils.set_random_seed(args.seed)
    classifier = load_classifier(args, len(class_names))
    args.sequence_length = classifier.preprocessor.sequence_length
    heldout = heldout_arrays(classifier.preprocessor, sources, args)
    counts = train_label_counts(sources["train"], len(class_names))
    if counts.sum() == 0:
        refuse(f"the train split ({sources['train'].description}) has no examples")
    # The last batch counted whole: the stream repeats.
    resolve_steps(parser, args, -(-int(counts.sum()) // args.batch_size))
    majority = int(counts.argmax())
    task = {
        "name": task_name,
        "sources": sources,
        "names": names,
        "classes": class_names,
        "counts": counts,
        "majority": majority,
        "majority_accuracy": float(np.mean(heldout["test"][1] == majority)),
    }
    print_task(task, heldout)
    return task, classifier, heldout


def main(argv=None):
    parser, args = parse_args(argv)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, MODEL_FLAGS)
    quiet_tensorflow_logs()
    started = time.time()
    import keras
    from _shared.distribute import local_copy
    from _shared.distribute import start
    from _shared.report import count_trainable
    from _shared.report import plot_history
    from _shared.report import write_summary
    from _text_training.training import training_facts

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    with placement.scope():
        task, classifier, heldout = prepare(parser, args)
        trainer, history = train_classifier(
            args, run_state, classifier, task["sources"]["train"], heldout["validation"]
        )
        trainer = local_copy(trainer)
        accuracy = test_and_plot(args, trainer, heldout["test"], task["classes"])
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"Fine-tuning on {task['name']}",
    )
    examples = {"train": int(task["counts"].sum())}
    examples.update({part: int(len(heldout[part][1])) for part in PARTS[1:]})
    summary = write_summary(
        args.output_dir / "summary.json",
        args,
        started,
        task=task["name"],
        accuracy=accuracy,
        majority_class_accuracy=task["majority_accuracy"],
        majority_class=task["classes"][task["majority"]],
        classes=task["classes"],
        splits={
            part: {"split": task["names"][part], "examples": examples[part]}
            for part in PARTS
        },
        parameters=int(classifier.count_params()),
        trainable_parameters=count_trainable(classifier),
        best_preset=str(args.output_dir / "best_preset"),
        final_preset=str(args.output_dir / "final_preset"),
        **training_facts(args, history),
    )
    run_state.finish()
    verdict = "above" if accuracy > task["majority_accuracy"] else "NOT above"
    print(
        f"Test ({task['names']['test']}) accuracy {accuracy:.4f} vs majority-class "
        f"baseline {task['majority_accuracy']:.4f} ({verdict} it). Presets and plots "
        f"in {args.output_dir} ({summary['seconds']:.0f} s)."
    )
    return summary


if __name__ == "__main__":
    run(main)
