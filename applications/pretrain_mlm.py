"""Pretrains a gMLP or aMLP masked language model and saves it as a preset.

The default corpus is the Python Language Reference that ships with every
CPython (`pydoc_data.topics`), split by document (topic) into train,
validation and test sets; --train-files reads local text files and
--dataset a tensorflow-datasets corpus, both as a stream (any size, bounded
memory); --token-files a corpus tokenized once by tokenize_corpus.py, read
as token ids without TensorFlow. A WordPiece vocabulary is trained on the
first --vocabulary-sample train documents, at most
--vocabulary-sample-bytes of text (or read from --vocabulary). The
documents are tokenized
in tf.data, joined with [SEP] and cut into windows of --sequence-length
tokens across document boundaries (BERT's pretraining data), shuffled with
a bounded buffer, and each batch is masked with BERT's 15% (80% [MASK],
10% random, 10% kept) drawn from (--seed, step), so a resumed run sees the
same batches and masks as an uninterrupted one. The validation and test
windows (at most --eval-batches batches) are masked once, the same for
every run.

Training counts steps: --steps, or --epochs passes over the train windows
(one counting pass first). A checkpoint every --save-every steps holds the
weights, the optimizer and the input stream's position; a validation score
every --eval-every steps. --recipe paper sets the paper's pretraining
recipe for --model gmlp_base ... amlp_large: batch 256, 512 tokens, 1M
steps (Liu et al. 2021, section 4), and BERT's AdamW settings (peak
learning rate 1e-4 after 10,000 warm-up steps, weight decay 0.01; Devlin
et al. 2019) for what the stored copies of the paper do not show. The validation score chooses the best epoch (and,
with --patience, stops training); the test documents score that model once,
at the end ("heldout_*" in summary.json): masked-token accuracy and
perplexity over the real masked tokens only (padded mask slots do not count).

--model gmlp / amlp build a small encoder (--num-layers, --hidden-dim,
--intermediate-dim, --attention-dim); gmlp_base, gmlp_large, amlp_base and
amlp_large build the paper's configurations (keras_gmlp.applications).
--dataset takes a tensorflow-datasets text corpus prepared under
--data-dir (e.g. wikipedia/20230601.en, c4, imdb_reviews); its "text"
feature is used, or --text-feature. Batches are taken ahead of the step
in a background thread. When the output is a log file, not a terminal, a
line every --log-every-steps steps or --log-every-s seconds gives the
step, the loss, tokens per second, the share of the time spent waiting for
input and the time left; the first line the seconds from the start to the
first step (also in summary.json). history.csv has each checkpoint
period's tokens per second and input share, and tensorboard/ the same
scalars as the lines (tensorboardX, no TensorFlow needed).

Outputs in --output-dir: best_preset/ (lowest validation perplexity) and
final_preset/ (keras-hub presets with the tokenizer; fine-tune them with
applications/finetune_text_classifier.py), history.csv, tensorboard/,
training_curves.png, heldout_accuracy_by_frequency.png (test), summary.json
(which split is which) and run_state.json.

    .venv/bin/python applications/pretrain_mlm.py                 # a few minutes on a CPU
    .venv/bin/python applications/pretrain_mlm.py --model amlp --epochs 20
    .venv/bin/python applications/pretrain_mlm.py --model gmlp_base --recipe paper \\
        --train-files 'corpus/train-*.txt.gz' --dtype-policy mixed_bfloat16
"""

from _masked_lm import recipe
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _shared.tensorflow_input import keep_tensorflow_off_gpus


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return recipe.parse_args(__doc__, argv)


def main(argv=None):
    parser, args = parse_args(argv)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, recipe.MODEL_FLAGS)
    quiet_tensorflow_logs()
    started = run_state.started
    import keras

    keep_tensorflow_off_gpus()  # before TensorFlow runs anything
    from _masked_lm import data
    from _masked_lm import reporting
    from _masked_lm import training
    from _shared.distribute import start

    from keras_gmlp.utils.text_corpus import FIRST_WORD_ID
    from keras_gmlp.utils.text_corpus import unigram_perplexity_of_counts

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    tokenizer, train_source, masked, counts, corpus = data.masked_corpus(
        parser, args, run_state
    )
    test_y = masked["test"][1]
    unigram = unigram_perplexity_of_counts(counts, test_y, FIRST_WORD_ID)
    with placement.scope():
        model, trainer, history, initial_scores = training.train(
            args, run_state, tokenizer, train_source, masked["validation"]
        )
        accuracy, perplexity = reporting.test_and_plot(
            args, trainer, history, masked["test"], counts
        )
    scores = (accuracy, perplexity, unigram, int((test_y > 0).sum()))
    summary = reporting.write_run_summary(
        args, started, model, history, scores, corpus, initial_scores
    )
    run_state.finish()
    reporting.print_outcome(args, summary, accuracy, perplexity, unigram)
    return summary


if __name__ == "__main__":
    run(main)
