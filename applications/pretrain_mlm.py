"""Pretrains a gMLP or aMLP masked language model and saves it as a preset.

The default corpus is the Python Language Reference that ships with every
CPython (`pydoc_data.topics`), split by document (topic) into train,
validation and test sets; --train-files reads local text files and
--dataset a tensorflow-datasets corpus, both as a stream (any size, bounded
memory). A WordPiece vocabulary is trained on the first --vocabulary-sample
train documents (or read from --vocabulary). The documents are tokenized
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
feature is used, or --text-feature. The log and history.csv give tokens
per second and the share of the time spent taking input.

Outputs in --output-dir: best_preset/ (lowest validation perplexity) and
final_preset/ (keras-hub presets with the tokenizer; fine-tune them with
applications/finetune_text_classifier.py), history.csv,
training_curves.png, heldout_accuracy_by_frequency.png (test), summary.json
(which split is which) and run_state.json.

    python applications/pretrain_mlm.py                 # a few minutes on a CPU
    python applications/pretrain_mlm.py --model amlp --epochs 20
    python applications/pretrain_mlm.py --model gmlp_base --recipe paper \
        --train-files 'corpus/train-*.txt.gz' --dtype-policy mixed_bfloat16
"""

import time

from _shared.flag_values import positive_int
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _shared.variants import variant_tables
from _text_input.flags import CORPUS_RUN_FLAGS
from _text_input.flags import add_corpus_flags
from _text_input.flags import check_corpus_flags
from _text_training.flags import LANGUAGE_MODEL_FAST
from _text_training.flags import STEP_RUN_FLAGS
from _text_training.flags import add_optimizer_flags
from _text_training.flags import add_step_flags
from _text_training.flags import check_language_model_flags
from _text_training.flags import check_step_flags

SMALL_MODELS = ("gmlp", "amlp")
# The paper's configurations: short name -> builder in keras_gmlp.applications.
PAPER_MODELS = {
    name: row["builder"] for name, row in variant_tables().GMLP_TEXT_VARIANTS.items()
}
MODELS = SMALL_MODELS + tuple(PAPER_MODELS)
SMALL_DEFAULTS = {
    "num_layers": 4,
    "hidden_dim": 128,
    "intermediate_dim": 512,
    "attention_dim": 32,
}
FAST = LANGUAGE_MODEL_FAST
# The paper's pretraining recipe (--recipe paper): batch, length and steps
# from Liu et al. 2021 (section 4, as ../shared/REFERENCE.md records them),
# the optimizer from BERT (Devlin et al. 2019), which the paper follows, and
# BERT's 30,522 word pieces.
PAPER_RECIPE = {
    "batch_size": 256,
    "sequence_length": 512,
    "steps": 1_000_000,
    "warmup_steps": 10_000,
    "learning_rate": 1e-4,
    "weight_decay": 0.01,
    "vocabulary_size": 30522,
    "eval_every": 10_000,
    "save_every": 1_000,
}
# The validation and test masks are the same for every run and seed, so
# runs compare.
HELDOUT_MASK_SEEDS = {"validation": 12346, "test": 12345}
# The flags that define the model and its data: a resumed run must have
# the same (run_state.json keeps them).
MODEL_FLAGS = (
    "model",
    "num_layers",
    "hidden_dim",
    "intermediate_dim",
    "attention_dim",
    "sequence_length",
    "vocabulary_size",
    "dropout",
    "fast",
    *CORPUS_RUN_FLAGS,
    *STEP_RUN_FLAGS,
)


def build_parser():
    parser = make_parser(__doc__, "outputs/pretrain_mlm")
    parser.set_defaults(epochs=6, batch_size=32)
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="gmlp",
        help="a small gMLP/aMLP, or one of the paper's configurations",
    )
    parser.add_argument(
        "--num-layers",
        type=positive_int,
        help=f"blocks of a small model (default: {SMALL_DEFAULTS['num_layers']})",
    )
    parser.add_argument(
        "--hidden-dim",
        type=positive_int,
        help=f"d_model of a small model (default: {SMALL_DEFAULTS['hidden_dim']})",
    )
    parser.add_argument(
        "--intermediate-dim",
        type=positive_int,
        help="d_ffn of a small model, even "
        f"(default: {SMALL_DEFAULTS['intermediate_dim']})",
    )
    parser.add_argument(
        "--attention-dim",
        type=positive_int,
        help="tiny attention size of a small aMLP "
        f"(default: {SMALL_DEFAULTS['attention_dim']})",
    )
    parser.add_argument(
        "--sequence-length",
        type=positive_int,
        default=64,
        help="tokens per window, [CLS] and [SEP] included",
    )
    parser.add_argument(
        "--vocabulary-size",
        type=positive_int,
        default=1200,
        help="WordPiece vocabulary size to train (a small corpus may give fewer)",
    )
    parser.add_argument(
        "--recipe",
        choices=("paper",),
        help="paper: the paper's pretraining recipe for the paper's "
        "configurations (flags given still win)",
    )
    add_optimizer_flags(parser)
    add_corpus_flags(parser, "the Python reference")
    add_step_flags(parser)
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.recipe == "paper":
        if args.model not in PAPER_MODELS:
            parser.error(
                f"--recipe paper is the recipe of the paper's configurations "
                f"({', '.join(PAPER_MODELS)}); received --model {args.model}"
            )
        # Parse again with the recipe as defaults, so explicit flags win.
        parser.set_defaults(**PAPER_RECIPE)
        args = parser.parse_args(argv)
    paper = args.model in PAPER_MODELS
    for name in SMALL_DEFAULTS:
        value = getattr(args, name)
        if paper and value is not None:
            parser.error(
                f"--{name.replace('_', '-')} sets the size of a small model; "
                f"--model {args.model} has the paper's fixed configuration"
            )
        if value is None:
            setattr(args, name, FAST[name] if args.fast else SMALL_DEFAULTS[name])
    if args.model != "amlp":
        args.attention_dim = None
    if args.fast:
        args.sequence_length = min(args.sequence_length, FAST["sequence_length"])
        args.vocabulary_size = min(args.vocabulary_size, FAST["vocabulary_size"])
        if not flag_given(argv, "--epochs"):
            args.epochs = 1
    check_language_model_flags(parser, args)
    check_corpus_flags(parser, args)
    check_step_flags(parser, args, argv)
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args


def build_masked_lm(args, vocabulary_size):
    import keras_gmlp
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    if args.model in PAPER_MODELS:
        builder = getattr(keras_gmlp.applications, PAPER_MODELS[args.model])
        return builder(
            vocabulary_size=vocabulary_size,
            sequence_length=args.sequence_length,
            dropout=args.dropout,
        )
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim,
        dropout=args.dropout,
    )
    return gMLPMaskedLM(backbone)


def frequency_bins(frequency, num_bins=5, min_tokens=20):
    """Bins over token frequencies: quantile edges, then the smallest bin
    merged into its smaller neighbour until every bin holds `min_tokens`
    tokens, so no bar is empty or rests on a handful of tokens.

    Returns `(edges, bins)`: bin `b` is `[edges[b], edges[b + 1])` (the last
    one closed), and `bins` gives each token's bin."""
    import numpy as np

    edges = np.unique(np.quantile(frequency, np.linspace(0, 1, num_bins + 1)))
    while True:
        bins = np.clip(
            np.searchsorted(edges, frequency, side="right") - 1, 0, len(edges) - 2
        )
        sizes = np.bincount(bins, minlength=len(edges) - 1)
        smallest = int(np.argmin(sizes))
        if len(sizes) == 1 or sizes[smallest] >= min_tokens:
            return edges, bins
        if smallest == 0 or (
            smallest < len(sizes) - 1 and sizes[smallest + 1] < sizes[smallest - 1]
        ):
            edges = np.delete(edges, smallest + 1)  # merge with the next bin
        else:
            edges = np.delete(edges, smallest)  # merge with the previous bin


def plot_accuracy_by_frequency(model, heldout_x, labels, counts, path):
    """Held-out masked-token accuracy for rare to frequent tokens: a
    masked LM first learns the frequent ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import save_figure

    logits = model.predict(heldout_x, batch_size=256, verbose=0)
    real = labels > 0
    correct = (np.argmax(logits, axis=-1) == labels)[real]
    edges, bins = frequency_bins(counts[labels[real]])
    accuracy = [correct[bins == b].mean() for b in range(len(edges) - 1)]
    names = [
        f"{int(edges[b])}-{int(edges[b + 1])}\n({int((bins == b).sum())} tokens)"
        for b in range(len(edges) - 1)
    ]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.bar(names, accuracy, color="tab:blue")
    axis.set_xlabel("train occurrences of the masked token")
    axis.set_ylabel("held-out accuracy")
    axis.set_title("Masked-token accuracy by token frequency")
    axis.set_ylim(0, 1)
    axis.tick_params(axis="x", labelsize=7)
    figure.tight_layout()
    save_figure(figure, path)


def masked_corpus(parser, args, run):
    """The tokenizer, the train documents' source, the validation and test
    windows each masked once (HELDOUT_MASK_SEEDS) as (inputs, labels), the
    train token counts, and the facts the summary reports. Fills in the
    step flags."""
    import numpy as np
    from _text_input.corpus import corpus_facts
    from _text_input.corpus import language_model_corpus
    from _text_input.corpus import language_model_sources
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps

    from keras_gmlp.utils import text_corpus

    sources = language_model_sources(parser, args, text_corpus.reference_documents)
    tokenizer, heldout, counts, per_epoch = language_model_corpus(
        args, run, sources, args.sequence_length
    )
    resolve_steps(parser, args, per_epoch)
    num_slots = text_corpus.mask_slots(args.sequence_length)
    masked = {
        part: text_corpus.mask_tokens(
            heldout[part],
            np.random.default_rng(seed),
            num_slots,
            tokenizer.token_to_id("[MASK]"),
            tokenizer.vocabulary_size(),
        )
        for part, seed in HELDOUT_MASK_SEEDS.items()
    }
    name = (
        args.dataset
        or args.train_files
        or "pydoc_data.topics (Python Language Reference)"
    )
    corpus = corpus_facts(name, sources, heldout, per_epoch, args.batch_size)
    print_corpus("Corpus", corpus, args.sequence_length, tokenizer.vocabulary_size())
    return tokenizer, sources["train"], masked, counts, corpus


def masking(args, tokenizer, num_slots):
    """`finish(step, shard, rows)` of the train stream: BERT's masking of
    a shard's batch, drawn from (--seed, step, shard), as (inputs, labels)."""
    import numpy as np

    from keras_gmlp.utils.text_corpus import mask_tokens

    mask_id, size = tokenizer.token_to_id("[MASK]"), tokenizer.vocabulary_size()

    def finish(step, shard, rows):
        rng = np.random.default_rng([args.seed, step, 1, shard])
        return mask_tokens(rows, rng, num_slots, mask_id, size)

    return finish


def train(args, run, tokenizer, train_source, validation):
    """Builds and trains the masked LM, choosing the checkpoint on
    `validation`; returns (model, trainer, history, initial Toeplitz
    scores)."""
    import keras
    from _text_input.windows import token_windows
    from _text_training.training import fit_language_model
    from _text_training.training import training_stream

    from keras_gmlp.models import MaskedLMAccuracy
    from keras_gmlp.models import MaskedLMPerplexity
    from keras_gmlp.models import gMLPMaskedLMPreprocessor

    vocabulary_size = tokenizer.vocabulary_size()
    num_slots = validation[1].shape[1]
    keras.utils.set_random_seed(args.seed)
    model = build_masked_lm(args, vocabulary_size)
    # The batches are masked here; the preprocessor goes into the presets,
    # so they take raw text.
    model.preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=args.sequence_length, mask_selection_length=num_slots
    )
    stream = training_stream(
        args,
        train_source.dataset(),
        lambda documents: token_windows(documents, tokenizer, args.sequence_length),
        masking(args, tokenizer, num_slots),
    )
    trainer, history, initial_scores = fit_language_model(
        model,
        stream,
        validation,
        args,
        run,
        [MaskedLMAccuracy(), MaskedLMPerplexity()],
        monitor="val_masked_lm_perplexity",
    )
    return model, trainer, history, initial_scores


def test_and_plot(args, trainer, history, test, counts):
    """Scores the chosen weights once on the test documents, and draws the
    training curves and the test accuracy by token frequency; returns
    (accuracy, perplexity)."""
    from _shared.distribute import evaluation_data
    from _shared.distribute import local_copy
    from _shared.report import plot_history

    test_x, test_y = test
    x, y, weights = evaluation_data(test_x, test_y, ignored_label=0)
    scores = trainer.evaluate(
        x, y, sample_weight=weights, batch_size=256, verbose=0, return_dict=True
    )
    trainer = local_copy(trainer)
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"{args.model} masked LM on {args.dataset or 'the Python reference'}",
    )
    plot_accuracy_by_frequency(
        trainer,
        test_x,
        test_y,
        counts,
        args.output_dir / "heldout_accuracy_by_frequency.png",
    )
    return float(scores["masked_lm_accuracy"]), float(scores["masked_lm_perplexity"])


def main(argv=None):
    parser, args = parse_args(argv)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, MODEL_FLAGS)
    quiet_tensorflow_logs()
    started = time.time()
    import keras
    from _shared.distribute import start
    from _text_training.training import spatial_filter_report
    from _text_training.training import write_language_model_summary

    from keras_gmlp.utils.text_corpus import FIRST_WORD_ID
    from keras_gmlp.utils.text_corpus import unigram_perplexity_of_counts

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    output_dir = args.output_dir
    tokenizer, train_source, masked, counts, corpus = masked_corpus(
        parser, args, run_state
    )
    test_y = masked["test"][1]
    unigram = unigram_perplexity_of_counts(counts, test_y, FIRST_WORD_ID)
    with placement.scope():
        model, trainer, history, initial_scores = train(
            args, run_state, tokenizer, train_source, masked["validation"]
        )
        accuracy, perplexity = test_and_plot(
            args, trainer, history, masked["test"], counts
        )
    summary = write_language_model_summary(
        args,
        started,
        model,
        history,
        {
            "heldout_masked_token_accuracy": accuracy,
            "heldout_masked_token_perplexity": perplexity,
            "unigram_perplexity": unigram,
            "heldout_masked_tokens": int((test_y > 0).sum()),
        },
        corpus,
        toeplitz_scores=spatial_filter_report(
            model, initial_scores, output_dir / "spatial_filters.png"
        ),
    )
    run_state.finish()
    print(
        f"Test masked tokens ({summary['heldout_masked_tokens']}): accuracy "
        f"{accuracy:.4f}, perplexity {perplexity:.2f} (unigram baseline "
        f"{unigram:.2f}). Presets and plots in {output_dir} "
        f"({summary['seconds']:.0f} s)."
    )
    return summary


if __name__ == "__main__":
    run(main)
