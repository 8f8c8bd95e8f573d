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

    .venv/bin/python applications/pretrain_mlm.py                  # makes the preset
    .venv/bin/python applications/finetune_text_classifier.py
    .venv/bin/python applications/finetune_text_classifier.py --dataset glue/mnli --data-dir ~/tensorflow_datasets
    .venv/bin/python applications/finetune_text_classifier.py --train-files 'reviews/train/*/*.txt' --steps 2000
"""

import time

from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _shared.tensorflow_input import keep_tensorflow_off_gpus
from _text_classifier import recipe


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return recipe.parse_args(__doc__, argv)


def main(argv=None):
    parser, args = parse_args(argv)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, recipe.MODEL_FLAGS)
    quiet_tensorflow_logs()
    started = time.time()
    import keras

    keep_tensorflow_off_gpus()  # before TensorFlow runs anything
    from _shared.distribute import local_copy
    from _shared.distribute import start
    from _shared.report import plot_history
    from _text_classifier import reporting
    from _text_classifier import training

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    with placement.scope():
        task, classifier, heldout = training.prepare(parser, args)
        trainer, history = training.train_classifier(
            args, run_state, classifier, task["sources"]["train"], heldout["validation"]
        )
        trainer = local_copy(trainer)
        accuracy = reporting.test_and_plot(
            args, trainer, heldout["test"], task["classes"]
        )
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"Fine-tuning on {task['name']}",
    )
    summary = reporting.write_run_summary(
        args, started, (task, classifier, heldout), history, accuracy
    )
    run_state.finish()
    reporting.print_outcome(args, task, summary, accuracy)
    return summary


if __name__ == "__main__":
    run(main)
