"""Fine-tuning at equal size: does a tiny attention help sentence pairs more than single sentences?

The paper ("Pay Attention to MLPs", section 4.2 and Table 5) found gMLP as
good as BERT on single-sentence tasks (SST-2) but behind on sentence pairs
(MNLI), and one tiny attention head per block (aMLP) closing that gap. This
program checks it at small scale and offline:

1. pretrains BERT, gMLP and aMLP masked LMs at equal non-embedding size, on
   the corpus, vocabulary, masking and schedule of
   `benchmarks/mlm_vs_transformer.py` (its functions; `--steps` of it);
2. fine-tunes each, from the same pretrained weights, with `--seeds` seeds
   on the three offline tasks of `applications/finetune_text_classifier.py`:
   single paragraphs (which of four standard-library packages; majority
   25%) and paragraph pairs (the same package or not, and the same module
   file or not; majority 50%), split by module file as the program splits
   them;
3. reports the test accuracy at the epoch of best validation accuracy.

    python benchmarks/tiny_attention_finetuning.py --output-dir runs/pairs
    python benchmarks/tiny_attention_finetuning.py --quick --output-dir /tmp/q

Outputs in --output-dir (written atomically): tiny_attention_finetuning.json
and tiny_attention_finetuning.md (the table, also printed).
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


def _program():
    sys.path.insert(0, str(ROOT / "applications"))
    import finetune_text_classifier

    return finetune_text_classifier


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--seeds", type=_mlm().positive_int, default=3)
    parser.add_argument(
        "--pretrain-steps",
        type=_mlm().positive_int,
        default=3000,
        help="masked-LM steps per model (batch 32, sequences of 64)",
    )
    parser.add_argument("--epochs", type=_mlm().positive_int, default=8)
    parser.add_argument("--finetune-learning-rate", type=float, default=5e-4)
    parser.add_argument("--quick", action="store_true", help="checks the harness")
    args = parser.parse_args(argv)
    # The pretraining settings of the published MLM comparison.
    mlm_flags = ["--output-dir", args.output_dir, "--steps", str(args.pretrain_steps)]
    mlm_flags += ["--vocabulary-size", "1024", "--hidden-dim", "64"]
    mlm_flags += ["--learning-rate", "3e-3", "--models", ",".join(MODELS)]
    mlm_flags += ["--quick"] if args.quick else []
    args.mlm = _mlm().parse_args(mlm_flags)
    if args.quick:
        args.seeds, args.epochs = 1, 1
    return args


def pretrain(args, data, heldout):
    """{model: (masked LM, held-out perplexity)} after --pretrain-steps."""
    mlm = _mlm()
    vocabulary_size = data["tokenizer"].vocabulary_size()
    bert_counts = mlm.build_backbone("bert", args.mlm, vocabulary_size)[1]
    dims = mlm.matched_intermediate_dims(args.mlm, vocabulary_size, bert_counts[1])
    models = {}
    for name in MODELS:
        curve, _, model = mlm.train_one(
            name, 0, args.mlm, data, heldout, dims.get(name), return_model=True
        )
        models[name] = (model, curve[-1]["heldout_perplexity"])
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
    """(test accuracy at the best validation epoch, that epoch)."""

    import numpy as np

    def inputs(part):
        texts = tuple(np.asarray(column) for column in data[part]["texts"])
        return texts[0] if len(texts) == 1 else texts

    best = (-1.0, 0.0, 0)
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
        if scores[0] > best[0]:
            best = (scores[0], scores[1], epoch)
    return float(best[1]), best[2]


def load_tasks(args):
    program = _program()
    flags = argparse.Namespace(test_fraction=0.25, fast=args.quick)
    return {
        "package": program.offline_task(flags)[:2],
        "same-package": program.package_pair_task(flags)[:2],
        "same-module": program.module_pair_task(flags)[:2],
    }


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
            "runs": {name: [] for name in MODELS},
        }
        for seed in range(args.seeds):
            for name, (masked_lm, _) in pretrained.items():
                keras.utils.set_random_seed(seed)
                classifier = classifier_for(
                    name, masked_lm, data["tokenizer"], len(classes), args
                )
                accuracy, epoch = fine_tune(classifier, task_data, args)
                results["tasks"][task]["runs"][name].append(
                    {"seed": seed, "test_accuracy": accuracy, "best_epoch": epoch}
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
        "| task | majority | BERT | gMLP | aMLP | aMLP - gMLP per seed "
        "| BERT - gMLP per seed |",
        "|---|---|---|---|---|---|---|",
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
        majority = results["tasks"][task]["majority"]
        lines.append(f"| {task} | {majority:.3f} | {' | '.join(cells + gaps)} |")
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
