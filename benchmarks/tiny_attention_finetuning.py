"""Fine-tuning at equal size: does a tiny attention help sentence pairs more than single sentences?

The paper ("Pay Attention to MLPs", section 4.2 and Table 5) found gMLP as
good as BERT on single-sentence tasks (SST-2) but behind on sentence pairs
(MNLI), and one tiny attention head per block (aMLP) closing that gap. This
program checks it at small scale and offline:

1. pretrains BERT, gMLP and aMLP masked LMs at equal non-embedding size, on
   the corpus, vocabulary, masking and schedule of
   `benchmarks/mlm_vs_transformer.py` (its functions; `--pretrain-steps` of
   it, 12,000 as in its published table), and keeps them in --output-dir,
   so a rerun with the same settings goes straight to fine-tuning;
2. fine-tunes each, from the same pretrained weights, with `--seeds` seeds
   on the offline `--tasks` of `applications/finetune_text_classifier.py`:
   single paragraphs (which of four standard-library packages; majority
   25%) and paragraph pairs (the same package or not, and the same module
   file or not; majority 50%; `--pairs-per-paragraph` pairs from each
   first paragraph), split by module file as the program splits them;
3. reports the test accuracy at the epoch of best validation accuracy,
   and for the pair tasks what word overlap alone scores (the tf-idf
   cosine of the two paragraphs, thresholded on validation).

    python benchmarks/tiny_attention_finetuning.py --output-dir runs/pairs
    python benchmarks/tiny_attention_finetuning.py --quick --output-dir /tmp/q

Outputs in --output-dir (written atomically): tiny_attention_finetuning.json
and tiny_attention_finetuning.md (the table, also printed), and the
pretrained models (pretrained_<model>.keras, pretrained.json).
"""

import argparse
import functools
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time

from _flags import FlagParser

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ("bert", "gmlp", "amlp")
TASKS = ("package", "same-package", "same-module")
BASENAME = "tiny_attention_finetuning"


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _mlm():
    return _module(ROOT / "benchmarks" / "mlm_vs_transformer.py", "mlm_vs_transformer")


def _offline_tasks():
    """The fine-tuning program's offline tasks
    (applications/_text_classifier/offline_tasks.py)."""
    sys.path.insert(0, str(ROOT / "applications"))
    from _text_classifier import offline_tasks

    return offline_tasks


def _tasks(value):
    tasks = tuple(dict.fromkeys(task.strip() for task in value.split(",")))
    unknown = [task for task in tasks if task not in TASKS]
    if unknown or not value.strip():
        raise argparse.ArgumentTypeError(
            f"unknown task(s) {unknown or [value]}; allowed: {', '.join(TASKS)}"
        )
    return tasks


def parse_args(argv=None):
    parser = FlagParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seeds", type=_mlm().positive_int, default=3)
    parser.add_argument(
        "--pretrain-steps",
        type=_mlm().positive_int,
        default=12000,
        help="masked-LM steps per model (batch 32, sequences of 64)",
    )
    parser.add_argument(
        "--tasks",
        type=_tasks,
        default=TASKS,
        help=f"comma-separated, from {', '.join(TASKS)}",
    )
    parser.add_argument(
        "--pairs-per-paragraph",
        type=_mlm().positive_int,
        default=4,
        help="the pair tasks' pairs per first paragraph (the program's flag)",
    )
    parser.add_argument("--epochs", type=_mlm().positive_int, default=8)
    parser.add_argument("--finetune-learning-rate", type=float, default=5e-4)
    parser.add_argument("--quick", action="store_true", help="checks the harness")
    args = parser.parse_args(argv)
    # The pretraining settings of the published MLM comparison, which
    # evaluates every twentieth of the run (the batches depend on it).
    steps = args.pretrain_steps
    mlm_flags = ["--output-dir", args.output_dir, "--steps", str(steps)]
    mlm_flags += ["--eval-every", str(max(1, steps // 20))]
    mlm_flags += ["--vocabulary-size", "1024", "--hidden-dim", "64"]
    mlm_flags += ["--learning-rate", "3e-3", "--models", ",".join(MODELS)]
    mlm_flags += ["--quick"] if args.quick else []
    args.mlm = _mlm().parse_args(mlm_flags)
    if args.quick:
        args.seeds, args.epochs = 1, 1
    return args


def pretrain(args, data, heldout):
    """{model: (masked LM, held-out perplexity)} after --pretrain-steps.
    Each model is kept in --output-dir (pretrained_<model>.keras, its
    settings in pretrained.json): a rerun with the same pretraining
    settings fine-tunes them without pretraining again."""
    import keras

    mlm = _mlm()
    output_dir = pathlib.Path(args.output_dir)
    record_path = output_dir / "pretrained.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    # Every mlm_vs_transformer.py flag but where outputs go (as JSON has it).
    settings = {k: v for k, v in vars(args.mlm).items() if k != "output_dir"}
    settings = json.loads(json.dumps(settings))
    vocabulary_size = data["tokenizer"].vocabulary_size()
    bert_counts = mlm.build_backbone("bert", args.mlm, vocabulary_size)[1]
    dims = mlm.matched_intermediate_dims(args.mlm, vocabulary_size, bert_counts[1])
    models = {}
    for name in MODELS:
        path = output_dir / f"pretrained_{name}.keras"
        kept = record.get(name, {})
        if kept.get("settings") == settings and path.exists():
            model = keras.saving.load_model(path, compile=False)
            models[name] = (model, kept["heldout_perplexity"])
            print(f"  {name}: pretrained model read from {path}")
            continue
        curve, _, model = mlm.train_one(
            name, 0, args.mlm, data, heldout, dims.get(name), return_model=True
        )
        with mlm.atomic_path(path) as temporary:
            model.save(temporary)
        perplexity = curve[-1]["heldout_perplexity"]
        record[name] = {"settings": settings, "heldout_perplexity": perplexity}
        mlm.write_text(record_path, json.dumps(record, indent=1))
        models[name] = (model, perplexity)
    return models


def classifier_for(name, masked_lm, tokenizer, num_classes, args):
    """A fresh classifier on a copy of `masked_lm`'s encoder."""
    import keras
    import keras_hub

    from keras_gmlp.models import gMLPTextClassifier
    from keras_gmlp.models import gMLPTextClassifierPreprocessor

    encoder = masked_lm.backbone.__class__.from_config(masked_lm.backbone.get_config())
    encoder.set_weights(masked_lm.backbone.get_weights())
    length = args.mlm.sequence_length
    if name == "bert":
        bert_tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=tokenizer.get_vocabulary(), lowercase=True
        )
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            bert_tokenizer, sequence_length=length
        )
        classifier = keras_hub.models.BertTextClassifier(
            encoder, num_classes, preprocessor=preprocessor
        )
    else:
        preprocessor = gMLPTextClassifierPreprocessor(tokenizer, sequence_length=length)
        classifier = gMLPTextClassifier(encoder, num_classes, preprocessor=preprocessor)
    classifier.compile(
        optimizer=keras.optimizers.AdamW(args.finetune_learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return classifier


def fine_tune(classifier, data, args):
    """(test accuracy at the best validation epoch, that epoch, the
    validation accuracy of each epoch)."""

    import numpy as np

    def inputs(part):
        texts = tuple(np.asarray(column) for column in data[part]["texts"])
        return texts[0] if len(texts) == 1 else texts

    best, curve = (-1.0, 0.0, 0), []
    for epoch in range(1, args.epochs + 1):
        classifier.fit(
            inputs("train"), data["train"]["labels"], batch_size=32, epochs=1, verbose=0
        )
        scores = [
            classifier.evaluate(
                inputs(part), data[part]["labels"], verbose=0, return_dict=True
            )["accuracy"]
            for part in ("validation", "test")
        ]
        curve.append(round(float(scores[0]), 4))
        if scores[0] > best[0]:
            best = (scores[0], scores[1], epoch)
    return float(best[1]), best[2], curve


def load_tasks(args):
    offline_tasks = _offline_tasks()
    flags = argparse.Namespace(
        test_fraction=0.25,
        fast=args.quick,
        pairs_per_paragraph=args.pairs_per_paragraph,
    )
    make = {
        "package": offline_tasks.offline_task,
        "same-package": offline_tasks.package_pair_task,
        "same-module": offline_tasks.module_pair_task,
    }
    return {task: make[task](flags)[:2] for task in args.tasks}


def word_overlap_accuracy(data):
    """A pair task's test accuracy from word overlap alone: the tf-idf
    cosine of the two paragraphs (Keras' TextVectorization, fitted on the
    train pairs) above a threshold chosen on validation. None for single
    paragraphs."""
    import keras
    import numpy as np

    if len(data["train"]["texts"]) == 1:
        return None
    vectorizer = keras.layers.TextVectorization(output_mode="tf_idf")
    vectorizer.adapt(np.concatenate(data["train"]["texts"]))

    def similarities(part):
        a, b = (
            keras.ops.convert_to_numpy(vectorizer(np.asarray(texts)))
            for texts in data[part]["texts"]
        )
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        return (a * b).sum(axis=1) / np.maximum(norms, 1e-12)

    validation, test = similarities("validation"), similarities("test")
    labels = data["validation"]["labels"]
    threshold = max(validation, key=lambda t: np.mean((validation >= t) == labels))
    return float(np.mean((test >= threshold) == data["test"]["labels"]))


def run(args):
    import keras
    import numpy as np

    mlm = _mlm()
    started = time.perf_counter()
    data = mlm.prepare_data(args.mlm)
    vocabulary_size = data["tokenizer"].vocabulary_size()
    heldout = mlm.mask_batch(
        data["heldout"], np.random.default_rng(12345), data["num_slots"],
        data["mask_id"], vocabulary_size,
    )  # fmt: skip
    pretrained = pretrain(args, data, heldout)
    results = {
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "backend": keras.backend.backend(),
        "config": {
            k: v for k, v in vars(args).items() if k not in ("mlm", "output_dir")
        },
        "pretraining_perplexity": {n: p for n, (_, p) in pretrained.items()},
        "tasks": {},
    }
    for task, (task_data, classes) in load_tasks(args).items():
        labels = task_data["test"]["labels"]
        results["tasks"][task] = {
            "classes": classes,
            "examples": {part: len(task_data[part]["labels"]) for part in task_data},
            "majority": float(np.bincount(labels).max() / len(labels)),
            "word_overlap": word_overlap_accuracy(task_data),
            "runs": {name: [] for name in MODELS},
        }
        for seed in range(args.seeds):
            for name, (masked_lm, _) in pretrained.items():
                keras.utils.set_random_seed(seed)
                classifier = classifier_for(
                    name, masked_lm, data["tokenizer"], len(classes), args
                )
                accuracy, epoch, curve = fine_tune(classifier, task_data, args)
                results["tasks"][task]["runs"][name].append(
                    {
                        "seed": seed,
                        "test_accuracy": accuracy,
                        "best_epoch": epoch,
                        "validation_accuracy": curve,
                    }
                )
                print(f"  {task} {name} seed {seed}: test accuracy {accuracy:.3f}")
    results["seconds"] = time.perf_counter() - started
    return results


def summary(results):
    """Per task and model, the median accuracy and the gaps the paper
    reads: aMLP - gMLP and BERT - gMLP, seed by seed."""
    rows = {}
    for task, outcome in results["tasks"].items():
        accuracy = {
            name: [run["test_accuracy"] for run in runs]
            for name, runs in outcome["runs"].items()
        }
        rows[task] = {
            "median": {name: statistics.median(v) for name, v in accuracy.items()},
            "range": {name: (min(v), max(v)) for name, v in accuracy.items()},
            "amlp_minus_gmlp": [
                a - g for a, g in zip(accuracy["amlp"], accuracy["gmlp"])
            ],
            "bert_minus_gmlp": [
                b - g for b, g in zip(accuracy["bert"], accuracy["gmlp"])
            ],
        }
    return rows


def table(results):
    lines = [
        "| task | majority | word overlap | BERT | gMLP | aMLP "
        "| aMLP - gMLP per seed | BERT - gMLP per seed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, row in results["summary"].items():
        cells = [
            f"{row['median'][n]:.3f} [{row['range'][n][0]:.3f}, {row['range'][n][1]:.3f}]"
            for n in MODELS
        ]
        gaps = [
            ", ".join(f"{gap:+.3f}" for gap in row[key])
            for key in ("amlp_minus_gmlp", "bert_minus_gmlp")
        ]
        outcome = results["tasks"][task]
        overlap = outcome["word_overlap"]
        baselines = [
            f"{outcome['majority']:.3f}",
            "-" if overlap is None else f"{overlap:.3f}",
        ]
        lines.append(f"| {task} | {' | '.join(baselines + cells + gaps)} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    results = run(args)
    results["summary"] = summary(results)
    output_dir = pathlib.Path(args.output_dir)
    mlm = _mlm()
    mlm.write_text(output_dir / f"{BASENAME}.json", json.dumps(results, indent=1))
    mlm.write_text(output_dir / f"{BASENAME}.md", table(results) + "\n")
    print(table(results))
    print(f"total time {results['seconds'] / 60:.1f} min; outputs in {output_dir}")


if __name__ == "__main__":
    main()
