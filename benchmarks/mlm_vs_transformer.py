"""Masked language modelling at equal size: gMLP, aMLP and BERT on the same data.

The paper's central language claim ("Pay Attention to MLPs", Table 3-4): at
equal parameter count gMLP reaches the MLM perplexity of a Transformer and
aMLP, with one tiny attention head per block, beats it. This program checks
the ordering at small scale on text every CPython install carries. It also
runs the paper's gating ablation (Table 3): gMLP with the linear, additive
and multiplicative (unsplit) spatial gating units, and an MLP-Mixer of
`keras_gmlp.layers.MixerBlock`s (padding masked) at the same size.

Everything but the model is shared: the corpus (the Python Language
Reference in `pydoc_data.topics` plus the docstrings of the standard
library's modules), split by document into train and held-out sets; one
WordPiece vocabulary trained on the train documents; the masking (BERT's
15% with 80/10/10 replacement, drawn by numpy from the seed, so every model
sees the same masked batches); sequence length, batch, AdamW with a linear
warm-up and cosine decay, and the number of steps. The models are
keras-hub's `BertMaskedLM` and `keras_gmlp.models.gMLPMaskedLM` on a gMLP
and an aMLP backbone whose width inside the blocks is chosen so that their
non-embedding parameters match BERT's within 3%. Held-out perplexity is
`keras_gmlp.models.MaskedLMPerplexity`: exp of the mean cross-entropy over
the real masked tokens of a fixed masked copy of the held-out documents.

    python benchmarks/mlm_vs_transformer.py --output-dir runs/mlm     # full
    python benchmarks/mlm_vs_transformer.py --quick --output-dir /tmp/q

Outputs in --output-dir (each written atomically): mlm_vs_transformer.json
(configuration, parameter counts, curves, summary), mlm_vs_transformer.csv
(one row per evaluation), mlm_vs_transformer.png (held-out perplexity
curves, median over seeds with the min-max band) and mlm_vs_transformer.md
(the table). The table is also printed.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

from _flags import FlagParser

# In the order of the paper's Table 3, then aMLP.
MODELS = (
    "bert",
    "mixer",
    "gmlp_linear",
    "gmlp_additive",
    "gmlp_multiplicative",
    "gmlp",
    "amlp",
)
LABELS = {
    "bert": "BERT",
    "mixer": "MLP-Mixer",
    "gmlp_linear": "gMLP, linear f(Z)",
    "gmlp_additive": "gMLP, additive Z + f(Z)",
    "gmlp_multiplicative": "gMLP, multiplicative Z * f(Z)",
    "gmlp": "gMLP (split Z1 * f(Z2))",
    "amlp": "aMLP",
}
# The spatial gating unit's form of each gMLP model (SpatialGatingUnit).
GATINGS = {
    "gmlp_linear": "linear",
    "gmlp_additive": "additive",
    "gmlp_multiplicative": "multiplicative",
    "gmlp": "split",
    "amlp": "split",
}
BASENAME = "mlm_vs_transformer"


def positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def parse_args(argv=None):
    parser = FlagParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[2:]),
    )
    parser.add_argument(
        "--output-dir", required=True, help="where the JSON, CSV, PNG and table go"
    )
    parser.add_argument(
        "--backend",
        choices=("jax", "tensorflow", "torch"),
        help="Keras backend (default: $KERAS_BACKEND, else jax)",
    )
    parser.add_argument(
        "--models",
        default=",".join(MODELS),
        help=f"comma-separated subset of {','.join(MODELS)}",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
        default=3,
        help="how many seeds, counting up from --first-seed",
    )
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="lets several processes share the seeds of one "
        "comparison (merge their JSON with --merge)",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        default=None,
        help="train nothing: combine the runs of these "
        "mlm_vs_transformer.json files (same configuration, "
        "different seeds) into --output-dir",
    )
    parser.add_argument("--steps", type=positive_int, default=1000)
    parser.add_argument("--eval-every", type=positive_int, default=100)
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--sequence-length", type=positive_int, default=64)
    parser.add_argument("--vocabulary-size", type=positive_int, default=4000)
    parser.add_argument("--hidden-dim", type=positive_int, default=128)
    parser.add_argument("--bert-layers", type=positive_int, default=2)
    parser.add_argument("--bert-heads", type=positive_int, default=2)
    parser.add_argument(
        "--gmlp-layers",
        type=positive_int,
        default=4,
        help="depth of the MLP models (gMLPs, aMLP, MLP-Mixer; the paper's "
        "gMLP is deeper and narrower than BERT at equal size)",
    )
    parser.add_argument(
        "--attention-dim",
        type=positive_int,
        default=32,
        help="aMLP's tiny attention size",
    )
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--warmup-fraction", type=float, default=0.05)
    parser.add_argument("--heldout-fraction", type=float, default=0.1)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny models on a little text for a few steps: "
        "checks the harness, decides nothing",
    )
    args = parser.parse_args(argv)
    args.models = [name.strip() for name in args.models.split(",") if name.strip()]
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown or not args.models:
        parser.error(
            f"--models takes names from {MODELS}; received {unknown or 'none'}"
        )
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1); received {args.dropout}")
    if not 0.0 < args.heldout_fraction < 1.0:
        parser.error(
            f"--heldout-fraction must be in (0, 1); received {args.heldout_fraction}"
        )
    if not 0.0 <= args.warmup_fraction < 1.0:
        parser.error(
            f"--warmup-fraction must be in [0, 1); received {args.warmup_fraction}"
        )
    if args.quick:
        args.seeds, args.steps, args.eval_every = 1, 2, 2
        args.batch_size, args.sequence_length, args.vocabulary_size = 8, 32, 300
        args.hidden_dim, args.bert_layers, args.bert_heads = 32, 1, 2
        args.gmlp_layers, args.attention_dim = 1, 8
    if args.sequence_length < 8:
        parser.error(
            f"--sequence-length must be at least 8; received {args.sequence_length}"
        )
    if args.hidden_dim % args.bert_heads:
        parser.error(
            f"--hidden-dim ({args.hidden_dim}) must be a multiple of --bert-heads ({args.bert_heads})"
        )
    output_dir = pathlib.Path(args.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        parser.error(f"--output-dir {output_dir} exists and is not a directory")
    output_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(output_dir, os.W_OK):
        parser.error(f"--output-dir {output_dir} is not writable")
    return args


# ---------------------------------------------------------------- the corpus


def load_documents(quick):
    """{name: text}: the reference's topics, and the stdlib modules'
    docstrings (the corpus of keras_gmlp.utils.text_corpus)."""
    from keras_gmlp.utils import text_corpus

    topics = text_corpus.reference_documents()
    documents = {f"topics:{name}": text for name, text in topics.items()}
    if quick:
        names = sorted(documents)[:10]
        return {name: documents[name] for name in names}
    for relative in text_corpus.stdlib_module_files():
        # doctest and unittest are about tests, not CPython's prose.
        if "test" in relative.split("/")[0]:
            continue
        text = "\n\n".join(text_corpus.module_docstrings(relative))
        if len(text) > 200:
            documents[f"stdlib:{relative}"] = text
    return documents


def mask_batch(token_ids, rng, num_slots, mask_id, vocabulary_size):
    """text_corpus.mask_tokens' inputs and labels, and the labels' weights
    (0 for the slots a row leaves unused)."""
    from keras_gmlp.utils import text_corpus

    x, labels = text_corpus.mask_tokens(
        token_ids, rng, num_slots, mask_id, vocabulary_size
    )
    return x, labels, (labels > 0).astype("float32")


def prepare_data(args):
    import numpy as np
    import tensorflow as tf

    from keras_gmlp.models import gMLPTokenizer
    from keras_gmlp.utils import text_corpus

    documents = load_documents(args.quick)
    # A fixed split by document (not by sequence), the same for every run.
    train_names, heldout_names = text_corpus.split_names(
        documents, args.heldout_fraction
    )
    train_texts = [documents[name] for name in train_names]
    with tempfile.TemporaryDirectory() as folder:
        # The trainer streams files line by line, which is faster than a
        # dataset of whole documents.
        path = os.path.join(folder, "train.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(train_texts))
        tokenizer = gMLPTokenizer.from_corpus(
            [path], vocabulary_size=args.vocabulary_size, lowercase=True
        )

    def tokenize(names):
        # Outside tf.data, batched inputs come back as lists of lists.
        token_lists = tokenizer(tf.constant([documents[name] for name in names]))
        return [np.asarray(tokens, dtype="int32") for tokens in token_lists]

    ids = {
        token: tokenizer.token_to_id(token) for token in ("[CLS]", "[SEP]", "[MASK]")
    }
    pack = lambda names: text_corpus.pack_windows(  # noqa: E731
        tokenize(names),
        args.sequence_length,
        ids["[CLS]"],
        ids["[SEP]"],
        end_every_window=True,
    )
    train, heldout = pack(train_names), pack(heldout_names)
    return {
        "tokenizer": tokenizer,
        "train": train,
        "heldout": heldout,
        "train_documents": len(train_names),
        "heldout_documents": len(heldout_names),
        "mask_id": ids["[MASK]"],
        # One slot more than the programs' masks have.
        "num_slots": text_corpus.mask_slots(args.sequence_length) + 1,
    }


def unigram_perplexity(data, heldout_labels):
    """Perplexity of predicting each masked token by its train frequency
    (add-one smoothed): the level a model reaches by ignoring context."""
    from keras_gmlp.utils import text_corpus

    perplexity, _ = text_corpus.unigram_perplexity(
        data["train"],
        heldout_labels,
        data["tokenizer"].vocabulary_size(),
        text_corpus.FIRST_WORD_ID,
    )
    return perplexity


# ---------------------------------------------------------------- the models


def bert_parameter_counts(backbone):
    """(embedding, non-embedding) parameters of BERT's encoder. Token,
    position and segment tables are embeddings; the pooler is left out:
    masked LM training never uses it."""
    embedding = sum(
        backbone.get_layer(name).count_params()
        for name in ("token_embedding", "position_embedding", "segment_embedding")
    )
    pooler = backbone.get_layer("pooled_dense").count_params()
    return embedding, backbone.count_params() - embedding - pooler


def build_text_mixer(args, vocabulary_size, channels_mlp_dim):
    """The paper's MLP-Mixer baseline for MLM: token and segment embeddings
    (no positions: the token-mixing MLP is position-specific), MixerBlocks
    with padding masked, a final norm; exactly `sequence_length` tokens, as
    the windows are. Returns the functional encoder and its counts."""
    import keras

    from keras_gmlp.layers import MixerBlock

    length = args.sequence_length
    names = ("token_ids", "segment_ids", "padding_mask")
    inputs = {name: keras.Input((length,), dtype="int32", name=name) for name in names}
    initializer = keras.initializers.TruncatedNormal(stddev=0.02)
    token_embedding = keras.layers.ReversibleEmbedding(
        vocabulary_size, args.hidden_dim, embeddings_initializer=initializer
    )
    segment_embedding = keras.layers.Embedding(
        2, args.hidden_dim, embeddings_initializer=initializer
    )
    x = keras.layers.Add()(
        [token_embedding(inputs["token_ids"]), segment_embedding(inputs["segment_ids"])]
    )
    x = keras.layers.Dropout(args.dropout)(x)
    for index in range(args.gmlp_layers):
        block = MixerBlock(
            args.hidden_dim,
            length,
            channels_mlp_dim,
            length,
            dropout=args.dropout,
            name=f"mixer_block_{index}",
        )
        x = block(x, padding_mask=inputs["padding_mask"])
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    encoder = keras.Model(inputs, x, name="text_mixer")
    encoder.token_embedding = token_embedding
    embedding = token_embedding.count_params() + segment_embedding.count_params()
    return encoder, (embedding, encoder.count_params() - embedding)


def build_backbone(name, args, vocabulary_size, intermediate_dim=None):
    """The encoder and its (embedding, non-embedding) parameter counts;
    `intermediate_dim` is the MLP models' d_ffn (the Mixer's channel MLP)."""
    import keras_hub

    from keras_gmlp.models import gMLPBackbone

    if name == "mixer":
        return build_text_mixer(args, vocabulary_size, intermediate_dim)
    if name == "bert":
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=vocabulary_size,
            num_layers=args.bert_layers,
            num_heads=args.bert_heads,
            hidden_dim=args.hidden_dim,
            intermediate_dim=4 * args.hidden_dim,
            dropout=args.dropout,
            max_sequence_length=args.sequence_length,
        )
        return backbone, bert_parameter_counts(backbone)
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=args.gmlp_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim if name == "amlp" else None,
        dropout=args.dropout,
        gating=GATINGS[name],
    )
    return backbone, (
        backbone.count_embedding_params(),
        backbone.count_non_embedding_params(),
    )


def build_masked_lm(name, args, vocabulary_size, intermediate_dim=None):
    import keras
    import keras_hub

    from keras_gmlp.models import gMLPMaskedLM

    backbone, _ = build_backbone(name, args, vocabulary_size, intermediate_dim)
    if name == "bert":
        return keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    if name != "mixer":
        return gMLPMaskedLM(backbone, preprocessor=None)
    # gMLPMaskedLM's head, on the Mixer's output.
    head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=vocabulary_size,
        token_embedding=backbone.token_embedding,
        intermediate_activation="gelu",
        layer_norm_epsilon=1e-6,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
    )
    positions = keras.Input((None,), dtype="int32", name="mask_positions")
    outputs = head(backbone(backbone.input), positions)
    return keras.Model({**backbone.input, "mask_positions": positions}, outputs)


def matched_intermediate_dims(args, vocabulary_size, target):
    """The even d_ffn per MLP model whose non-embedding count is closest to
    `target`; the count is linear in d_ffn, so two builds fix it."""
    dims = {}
    for name in MODELS[1:]:
        low, high = 2, 4 * args.hidden_dim
        count_low = build_backbone(name, args, vocabulary_size, low)[1][1]
        count_high = build_backbone(name, args, vocabulary_size, high)[1][1]
        per_unit = (count_high - count_low) / (high - low)
        dim = low + (target - count_low) / per_unit
        dims[name] = max(2, 2 * int(round(dim / 2)))
    return dims


def compile_model(model, args):
    import keras

    from keras_gmlp.models import MaskedLMAccuracy
    from keras_gmlp.models import MaskedLMPerplexity

    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=args.steps - int(args.warmup_fraction * args.steps),
        warmup_target=args.learning_rate,
        warmup_steps=int(args.warmup_fraction * args.steps),
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(
            learning_rate=schedule, weight_decay=args.weight_decay, clipnorm=1.0
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[MaskedLMAccuracy(), MaskedLMPerplexity()],
    )


def train_one(name, seed, args, data, heldout, intermediate_dim, return_model=False):
    """(curve, Toeplitz scores), and the trained model with `return_model`."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(seed)
    vocabulary_size = data["tokenizer"].vocabulary_size()
    model = build_masked_lm(name, args, vocabulary_size, intermediate_dim)
    compile_model(model, args)
    initial_toeplitz = spatial_toeplitz_scores(name, model)
    # The batches and their masks depend on the seed only, not the model.
    rng = np.random.default_rng(seed)
    curve = []
    started = time.perf_counter()
    for first_step in range(0, args.steps, args.eval_every):
        num_steps = min(args.eval_every, args.steps - first_step)
        rows = rng.integers(0, len(data["train"]), size=num_steps * args.batch_size)
        x, y, weights = mask_batch(
            data["train"][rows],
            rng,
            data["num_slots"],
            data["mask_id"],
            vocabulary_size,
        )
        history = model.fit(
            x,
            y,
            sample_weight=weights,
            batch_size=args.batch_size,
            epochs=1,
            shuffle=False,
            verbose=0,
        )
        scores = model.evaluate(
            heldout[0],
            heldout[1],
            sample_weight=heldout[2],
            batch_size=4 * args.batch_size,
            verbose=0,
            return_dict=True,
        )
        curve.append(
            {
                "step": first_step + num_steps,
                "train_loss": float(history.history["loss"][-1]),
                "train_perplexity": float(history.history["masked_lm_perplexity"][-1]),
                "heldout_perplexity": float(scores["masked_lm_perplexity"]),
                "heldout_accuracy": float(scores["masked_lm_accuracy"]),
                "seconds": time.perf_counter() - started,
            }
        )
        print(
            f"  {name} seed {seed} step {curve[-1]['step']:5d}: held-out "
            f"perplexity {curve[-1]['heldout_perplexity']:8.2f}, accuracy "
            f"{curve[-1]['heldout_accuracy']:.3f} ({curve[-1]['seconds']:.0f} s)",
            flush=True,
        )
    toeplitz = initial_toeplitz and {
        "initial": initial_toeplitz,
        "trained": spatial_toeplitz_scores(name, model),
    }
    return (curve, toeplitz, model) if return_model else (curve, toeplitz)


def spatial_toeplitz_scores(name, model):
    """Per layer, how close the spatial weights are to Toeplitz (the paper's
    observation about trained MLM models); None for BERT and the Mixer,
    which have no spatial gating unit."""
    if name in ("bert", "mixer"):
        return None
    from keras_gmlp.visualization import toeplitz_scores

    return [round(score, 4) for score in toeplitz_scores(model)]


def last_fifth_gain(curve):
    """Relative perplexity improvement over the last fifth of training."""
    steps = [point["step"] for point in curve]
    start = steps[-1] - (steps[-1] // 5)
    before = min(
        (point for point in curve if point["step"] <= start),
        key=lambda point: start - point["step"],
        default=curve[0],
    )
    final = curve[-1]["heldout_perplexity"]
    return (before["heldout_perplexity"] - final) / before["heldout_perplexity"]


# ---------------------------------------------------------------- the outputs


def _shared_files():
    """The programs' atomic writers (`applications/_shared/files.py`): a
    temporary name beside the target, renamed into place, with the
    permissions the umask gives."""
    applications = str(pathlib.Path(__file__).resolve().parents[1] / "applications")
    if applications not in sys.path:
        sys.path.insert(0, applications)
    from _shared import files

    return files


def write_text(path, text):
    _shared_files().write_text(path, text)


def atomic_path(path):
    """A temporary path beside `path`, renamed to it if the block succeeds."""
    return _shared_files().atomic_path(path)


def summarise(results, args):
    summary = {}
    for name in args.models:
        runs = results["runs"][name]
        finals = [run["curve"][-1]["heldout_perplexity"] for run in runs]
        accuracies = [run["curve"][-1]["heldout_accuracy"] for run in runs]
        gains = [last_fifth_gain(run["curve"]) for run in runs]
        summary[name] = {
            "median_perplexity": statistics.median(finals),
            "min_perplexity": min(finals),
            "max_perplexity": max(finals),
            "median_accuracy": statistics.median(accuracies),
            "last_fifth_gains": gains,
            "max_last_fifth_gain": max(gains),
            "levelled_off": all(gain < 0.02 for gain in gains),
            "seconds_per_run": statistics.median(
                run["curve"][-1]["seconds"] for run in runs
            ),
            "toeplitz_scores": median_toeplitz_scores(runs),
        }
    return summary


def median_toeplitz_scores(runs):
    """{"initial", "trained"}: each layer's median score over the seeds, or
    None for BERT and for runs written before the scores were recorded."""
    scores = [run.get("toeplitz_scores") for run in runs]
    if not all(score and score["trained"] for score in scores):
        return None
    return {
        stage: [statistics.median(layer) for layer in zip(*(s[stage] for s in scores))]
        for stage in ("initial", "trained")
    }


def table(results, args):
    lines = [
        "| model | layers | d_ffn | non-embedding params | embedding params "
        "| held-out perplexity, median [min, max] | masked-token accuracy (median) "
        "| last-fifth gain (max over seeds) | levelled off (< 2% in every seed) "
        "| Toeplitz score per layer, initial -> trained (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.models:
        model, row = results["models"][name], results["summary"][name]
        lines.append(
            f"| {LABELS[name]} | {model['num_layers']} | {model['intermediate_dim']} "
            f"| {model['non_embedding_params']:,} | {model['embedding_params']:,} "
            f"| {row['median_perplexity']:.2f} [{row['min_perplexity']:.2f}, "
            f"{row['max_perplexity']:.2f}] | {row['median_accuracy']:.3f} "
            f"| {100 * row['max_last_fifth_gain']:.2f}% "
            f"| {'yes' if row['levelled_off'] else 'no'} "
            f"| {toeplitz_cell(row['toeplitz_scores'])} |"
        )
    return "\n".join(lines)


def toeplitz_cell(scores):
    if scores is None:
        return "-"
    initial, trained = (
        ", ".join(f"{score:.2f}" for score in scores[stage])
        for stage in ("initial", "trained")
    )
    return f"{initial} -> {trained}"


def plot(results, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import ticker

    figure, axis = plt.subplots(figsize=(7, 4.5), dpi=100)
    for name in args.models:
        runs = results["runs"][name]
        steps = [point["step"] for point in runs[0]["curve"]]
        values = np.array(
            [[point["heldout_perplexity"] for point in run["curve"]] for run in runs]
        )
        model = results["models"][name]
        label = f"{LABELS[name]} ({model['non_embedding_params'] / 1e3:.0f}k non-emb.)"
        axis.plot(steps, np.median(values, axis=0), label=label)
        axis.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.25)
    axis.axhline(
        results["unigram_perplexity"], color="gray", linestyle=":", label="unigram"
    )
    axis.set_yscale("log")
    # Labels at 1, 2 and 5 per decade, as plain numbers: matplotlib's default
    # for a log axis that spans one or two decades is "2x10^1".
    axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    axis.yaxis.set_major_formatter(ticker.StrMethodFormatter("{x:g}"))
    axis.yaxis.set_minor_formatter(ticker.NullFormatter())
    axis.set_xlabel("training step")
    axis.set_ylabel("held-out masked-token perplexity")
    num_seeds = len(results["runs"][args.models[0]])
    axis.set_title(f"MLM at equal size, {num_seeds} seeds (median, min-max band)")
    axis.legend()
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png")
    plt.close(figure)


def write_outputs(results, args):
    output_dir = pathlib.Path(args.output_dir)
    write_text(output_dir / f"{BASENAME}.json", json.dumps(results, indent=1))
    rows = [
        "model,seed,step,train_loss,train_perplexity,heldout_perplexity,heldout_accuracy,seconds"
    ]
    for name, runs in results["runs"].items():
        for run in runs:
            for point in run["curve"]:
                rows.append(
                    ",".join(
                        str(value)
                        for value in (
                            name,
                            run["seed"],
                            point["step"],
                            point["train_loss"],
                            point["train_perplexity"],
                            point["heldout_perplexity"],
                            point["heldout_accuracy"],
                            round(point["seconds"], 2),
                        )
                    )
                )
    write_text(output_dir / f"{BASENAME}.csv", "\n".join(rows) + "\n")
    write_text(output_dir / f"{BASENAME}.md", table(results, args) + "\n")
    plot(results, args, output_dir / f"{BASENAME}.png")


def _read_parts(paths):
    parts = []
    for path in paths:
        try:
            parts.append(json.loads(pathlib.Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            raise SystemExit(f"--merge: cannot read {path}: {error}") from None
    return parts


def _merged_runs(paths, parts):
    """{model: {seed: run}} from every part, refusing a model built two ways
    or a seed of a model run twice."""
    models, runs = {}, {}
    for path, part in zip(paths, parts):
        for name, model in part["models"].items():
            if models.setdefault(name, model) != model:
                raise SystemExit(f"--merge: {path} builds {name} differently")
        # The seeds that finished: a stopped process lists seeds it never ran.
        for name, part_runs in part["runs"].items():
            for run in part_runs:
                if run["seed"] in runs.setdefault(name, {}):
                    raise SystemExit(
                        f"--merge: the files share seeds: {name} seed {run['seed']}"
                    )
                runs[name][run["seed"]] = run
    return models, runs


def merge(args):
    """One comparison from the JSON of processes that ran other seeds or
    other models of the same configuration."""
    # Settings that may differ between the processes of one comparison.
    own = {"seeds", "first_seed", "merge", "backend", "models"}
    parts = _read_parts(args.merge)
    first = parts[0]
    shared = lambda part: (  # noqa: E731
        {k: v for k, v in part["config"].items() if k not in own},
        part["backend"],
        part["corpus"],
    )
    for path, part in zip(args.merge[1:], parts[1:]):
        if shared(part) != shared(first):
            raise SystemExit(
                f"--merge: {path} has another configuration or corpus "
                f"than {args.merge[0]}"
            )
    models, runs = _merged_runs(args.merge, parts)
    names = [name for name in MODELS if runs.get(name)]
    seeds = sorted({seed for name in names for seed in runs[name]})
    results = dict(first)
    results["command"] = [part["command"] for part in parts]
    results["seeds"] = seeds
    # How the processes shared the machine is not recorded. The sum is the
    # wall time when they ran one after another (the faster way on 2 cores);
    # the longest is kept for processes run side by side.
    results["process_seconds"] = [part["seconds"] for part in parts]
    results["seconds"] = sum(results["process_seconds"])
    results["models"] = {name: models[name] for name in names}
    results["runs"] = {
        name: [runs[name][s] for s in sorted(runs[name])] for name in names
    }
    merged_args = argparse.Namespace(
        **{**first["config"], "output_dir": args.output_dir, "models": names}
    )
    results["config"] = {
        **first["config"],
        "models": names,
        "seeds": len(seeds),
        "first_seed": min(seeds),
    }
    results["summary"] = summarise(results, merged_args)
    write_outputs(results, merged_args)
    print(table(results, merged_args))
    print(
        f"{len(names)} models, seeds {seeds}, from {len(parts)} processes: "
        f"{results['seconds'] / 60:.1f} min in all, the longest "
        f"{max(results['process_seconds']) / 60:.1f} min; outputs in {args.output_dir}"
    )


def main(argv=None):
    args = parse_args(argv)
    if args.merge:
        merge(args)
        return
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
    import numpy as np

    started = time.perf_counter()
    data = prepare_data(args)
    vocabulary_size = data["tokenizer"].vocabulary_size()
    heldout = mask_batch(
        data["heldout"],
        np.random.default_rng(12345),
        data["num_slots"],
        data["mask_id"],
        vocabulary_size,
    )
    bert_counts = build_backbone("bert", args, vocabulary_size)[1]
    dims = matched_intermediate_dims(args, vocabulary_size, bert_counts[1])
    results = {
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "backend": keras.backend.backend(),
        "config": {
            key: value for key, value in vars(args).items() if key != "output_dir"
        },
        "seeds": list(range(args.first_seed, args.first_seed + args.seeds)),
        "corpus": {
            "train_documents": data["train_documents"],
            "heldout_documents": data["heldout_documents"],
            "train_sequences": len(data["train"]),
            "heldout_sequences": len(data["heldout"]),
            "heldout_masked_tokens": int(heldout[2].sum()),
            "vocabulary_size": vocabulary_size,
        },
        "unigram_perplexity": unigram_perplexity(data, heldout[1]),
        "models": {},
        "runs": {name: [] for name in args.models},
    }
    for name in args.models:
        counts = (
            bert_counts
            if name == "bert"
            else build_backbone(name, args, vocabulary_size, dims[name])[1]
        )
        results["models"][name] = {
            "num_layers": args.bert_layers if name == "bert" else args.gmlp_layers,
            "intermediate_dim": 4 * args.hidden_dim if name == "bert" else dims[name],
            "embedding_params": counts[0],
            "non_embedding_params": counts[1],
            "relative_to_bert": counts[1] / bert_counts[1] - 1,
        }
        if abs(counts[1] / bert_counts[1] - 1) > 0.03 and not args.quick:
            raise SystemExit(
                f"{name} has {counts[1]:,} non-embedding parameters, "
                f"more than 3% away from BERT's {bert_counts[1]:,}"
            )
    print(
        json.dumps(
            {
                "corpus": results["corpus"],
                "models": results["models"],
                "unigram_perplexity": results["unigram_perplexity"],
            },
            indent=1,
        ),
        flush=True,
    )
    for seed in results["seeds"]:
        for name in args.models:
            curve, toeplitz = train_one(name, seed, args, data, heldout, dims.get(name))
            results["runs"][name].append(
                {"seed": seed, "curve": curve, "toeplitz_scores": toeplitz}
            )
        # Outputs after every seed, so a stopped run still leaves results.
        results["summary"] = summarise(results, args)
        results["seconds"] = time.perf_counter() - started
        write_outputs(results, args)
    print(table(results, args))
    print(f"total time {results['seconds'] / 60:.1f} min; outputs in {args.output_dir}")


if __name__ == "__main__":
    main()
