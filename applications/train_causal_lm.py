"""Trains a causal gMLP or aMLP language model and generates text with it.

The default corpus is the Python Language Reference that ships with every
CPython (`pydoc_data.topics`); --corpus docstrings uses the docstrings of
the standard library's modules instead (read from its .py files);
--train-files reads local text files and --dataset a tensorflow-datasets
corpus, both as a stream; --token-files a corpus tokenized once by
tokenize_corpus.py, read as token ids without TensorFlow. The documents
are split into train, validation and test sets, a WordPiece vocabulary is
trained on the first --vocabulary-sample train documents, at most
--vocabulary-sample-bytes of text (or read from --vocabulary), and the
text is tokenized in tf.data, joined with [SEP] and cut into windows of
--sequence-length tokens across document boundaries. Training counts
steps (--steps, or --epochs), with a checkpoint every --save-every steps
that a rerun resumes from, input position included. The model (gMLPBackbone(causal=True):
every spatial projection is lower-triangular) learns to predict each next
token. The validation perplexity chooses the best epoch (and, with
--patience, stops training); the test perplexity ("heldout_*" in
summary.json) scores that model once and counts the real next tokens only.

After training (with the chosen weights), and with --preset DIR (no
training), the model continues
each --prompt with every keras-hub sampler: greedy, beam search, random,
top-k, top-p and contrastive search; random, top-k and top-p draw from
--seed. --quantize int8, float8, int4 or gptq (4-bit, calibrated block by
block on the first 128 train windows, or the bundled corpus' with --preset)
generates with a quantized copy of the model (`Model.quantize`), and after
training reports its test perplexity beside float32's; the presets stay
float.

In a log file (output not a terminal) a line every --log-every-steps
steps or --log-every-s seconds gives the step, loss, tokens per second,
input share and time left, and the first the seconds to the first step
(pretrain_mlm.py's lines; TensorBoard scalars in tensorboard/).

Outputs in --output-dir: best_preset/ (lowest validation perplexity) and
final_preset/ (keras-hub presets with the tokenizer), history.csv,
tensorboard/, training_curves.png, perplexity_by_position.png (test), generations.json,
summary.json (which split is which) and run_state.json.

    .venv/bin/python applications/train_causal_lm.py                # a few minutes on a CPU
    .venv/bin/python applications/train_causal_lm.py --preset outputs/train_causal_lm/final_preset \\
        --prompt "the with statement" --prompt "a class definition"
"""

import time

from _causal_lm import recipe
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _shared.tensorflow_input import keep_tensorflow_off_gpus


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return recipe.parse_args(__doc__, argv)


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    if args.preset is not None:
        quiet_tensorflow_logs()
        from _causal_lm import generation

        return generation.generate_only(parser, args, started)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, recipe.MODEL_FLAGS)
    quiet_tensorflow_logs()
    keep_tensorflow_off_gpus()  # before TensorFlow runs anything
    import keras
    from _causal_lm import data as lm_data
    from _causal_lm import generation
    from _causal_lm import reporting
    from _causal_lm import training
    from _shared.distribute import start

    from keras_gmlp.utils.text_corpus import unigram_perplexity_of_counts

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    tokenizer, train_source, data, counts, corpus = lm_data.next_token_corpus(
        parser, args, run_state
    )
    heldout_y = data["test"][1]
    unigram = unigram_perplexity_of_counts(counts, heldout_y, 1)
    with placement.scope():
        causal_lm, trainer, history, initial_scores = training.train(
            args, run_state, tokenizer, train_source, data["validation"]
        )
        perplexity = reporting.evaluate_and_plot(args, trainer, history, data["test"])
    heldout_tokens = int((heldout_y > 0).sum())
    print(
        f"Test perplexity {perplexity:.2f} over {heldout_tokens} "
        f"next tokens (unigram baseline {unigram:.2f}).",
        flush=True,
    )
    generations, scores = generation.generate_and_write(
        args, causal_lm, data["test"], (train_source, tokenizer)
    )
    scores = {
        "mode": "train",
        "heldout_perplexity": perplexity,
        "unigram_perplexity": unigram,
        "heldout_tokens": heldout_tokens,
        **scores,
    }
    extra = {"initial_scores": initial_scores, "generations": generations}
    summary = reporting.write_run_summary(
        args, started, causal_lm, history, scores, corpus, extra
    )
    run_state.finish()
    print(
        f"\nTest perplexity {perplexity:.2f} (unigram {unigram:.2f}). Presets, "
        f"generations and plots in {args.output_dir} ({summary['seconds']:.0f} s)."
    )
    return summary


if __name__ == "__main__":
    run(main)
