"""Trains a causal gMLP or aMLP language model and generates text with it.

The default corpus is the Python Language Reference that ships with every
CPython (`pydoc_data.topics`); --corpus docstrings uses the docstrings of
the standard library's modules instead (read from its .py files). The
documents are split into train and held-out sets, a WordPiece vocabulary
is trained on the train documents, and the text is cut into windows of
--sequence-length tokens. The model (gMLPBackbone(causal=True): every
spatial projection is lower-triangular) learns to predict each next token;
held-out perplexity counts the real next tokens only.

After training, and with --preset DIR (no training), the model continues
each --prompt with every keras-hub sampler: greedy, beam search, random,
top-k, top-p and contrastive search; random, top-k and top-p draw from
--seed.

Outputs in --output-dir: best_preset/ (lowest held-out perplexity) and
final_preset/ (keras-hub presets with the tokenizer), history.csv,
training_curves.png, perplexity_by_position.png, generations.json and
summary.json.

    python applications/train_causal_lm.py                # a few minutes on a CPU
    python applications/train_causal_lm.py --preset outputs/train_causal_lm/final_preset \\
        --prompt "the with statement" --prompt "a class definition"
"""

import json
import pathlib
import time

from _program import make_parser
from _program import positive_int
from _program import prepare_output_dir
from _program import run
from _program import unit_float
from _program import write_text
from _text_flags import flag_given

MODELS = ("gmlp", "amlp")
CORPORA = ("reference", "docstrings")
SAMPLERS = ("greedy", "beam", "random", "top_k", "top_p", "contrastive")
DEFAULT_PROMPTS = ("the with statement", "a class definition", "an exception is")
FAST = {
    "num_layers": 1,
    "hidden_dim": 32,
    "intermediate_dim": 64,
    "attention_dim": 8,
    "sequence_length": 32,
    "vocabulary_size": 300,
    "documents": 12,
    "max_length": 16,
}


def parse_args(argv=None):
    parser = make_parser(__doc__, "outputs/train_causal_lm")
    parser.set_defaults(epochs=8, batch_size=32)
    parser.add_argument("--model", choices=MODELS, default="gmlp",
                        help="gMLP, or aMLP (gMLP with a tiny causal attention)")
    parser.add_argument("--num-layers", type=positive_int, default=4, help="blocks")
    parser.add_argument("--hidden-dim", type=positive_int, default=128, help="d_model")
    parser.add_argument("--intermediate-dim", type=positive_int, default=512,
                        help="d_ffn, even")
    parser.add_argument("--attention-dim", type=positive_int, default=32,
                        help="aMLP's tiny attention size")
    parser.add_argument("--sequence-length", type=positive_int, default=64,
                        help="tokens per training window and most tokens generated")
    parser.add_argument("--vocabulary-size", type=positive_int, default=1200,
                        help="WordPiece vocabulary size to train (a small corpus may give fewer)")
    parser.add_argument("--corpus", choices=CORPORA, default="reference",
                        help="the Python reference, or the standard library's docstrings")
    parser.add_argument("--dropout", type=unit_float, default=0.1, help="dropout rate")
    parser.add_argument("--learning-rate", type=float, default=1e-3,
                        help="peak AdamW learning rate (linear warm-up, cosine decay)")
    parser.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    parser.add_argument("--heldout-fraction", type=unit_float, default=0.1,
                        help="share of documents held out")
    parser.add_argument("--preset",
                        help="generate with this causal preset instead of training")
    parser.add_argument("--prompt", action="append",
                        help="a text to continue; repeat for several "
                        f"(default: {' | '.join(DEFAULT_PROMPTS)})")
    parser.add_argument("--max-length", type=positive_int, default=48,
                        help="generated length in tokens, prompt included; at most "
                        "the model's sequence length")
    parser.add_argument("--samplers", default=",".join(SAMPLERS),
                        help="comma-separated keras-hub samplers to generate with")
    args = parser.parse_args(argv)

    args.samplers = [name.strip() for name in args.samplers.split(",") if name.strip()]
    unknown = [name for name in args.samplers if name not in SAMPLERS]
    if unknown or not args.samplers:
        parser.error(f"--samplers takes names from {SAMPLERS}; received {unknown or 'none'}")
    if args.prompt is not None and not all(p.strip() for p in args.prompt):
        parser.error("--prompt must not be empty")
    if args.fast:
        for name, value in FAST.items():
            if hasattr(args, name) and not flag_given(argv, "--" + name.replace("_", "-")):
                setattr(args, name, value)
        if not flag_given(argv, "--epochs"):
            args.epochs = 1
    if args.intermediate_dim % 2:
        parser.error(f"--intermediate-dim must be even; received {args.intermediate_dim}")
    if args.sequence_length < 8:
        parser.error(f"--sequence-length must be at least 8; received {args.sequence_length}")
    if args.vocabulary_size < 50:
        parser.error(f"--vocabulary-size must be at least 50; received {args.vocabulary_size}")
    if args.heldout_fraction == 0:
        parser.error("--heldout-fraction must be above 0: the held-out text scores the model")
    if args.preset is not None:
        args.preset = pathlib.Path(args.preset).expanduser()
        config_path = args.preset / "config.json"
        if not config_path.is_file():
            parser.error(
                f"--preset {args.preset} holds no preset (no config.json). Train "
                "one with: python applications/train_causal_lm.py"
            )
        try:
            backbone_config = json.loads(config_path.read_text())["config"]
        except (ValueError, KeyError):
            parser.error(f"--preset {args.preset}: config.json is not a keras-hub backbone config")
        if not backbone_config.get("causal"):
            parser.error(
                f"--preset {args.preset} holds a bidirectional encoder (e.g. from "
                "pretrain_mlm.py), which cannot generate. Train a causal one with: "
                "python applications/train_causal_lm.py"
            )
        limit = backbone_config.get("max_sequence_length")
        if args.max_length > limit:
            if flag_given(argv, "--max-length"):
                parser.error(
                    f"--max-length {args.max_length} exceeds the preset's "
                    f"max_sequence_length {limit}"
                )
            args.max_length = limit
    elif args.max_length > args.sequence_length:
        if flag_given(argv, "--max-length"):
            parser.error(
                f"--max-length {args.max_length} exceeds --sequence-length {args.sequence_length}"
            )
        args.max_length = args.sequence_length
    if args.model != "amlp":
        args.attention_dim = None
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args


def load_documents(args):
    import _text_data as text_data

    if args.corpus == "reference":
        documents = text_data.reference_documents()
    else:
        documents = {}
        for name in text_data.stdlib_module_files():
            text = "\n\n".join(text_data.module_docstrings(name))
            if len(text) > 200:
                documents[name] = text
    if args.fast:
        names = sorted(documents)[: FAST["documents"]]
        documents = {name: documents[name] for name in names}
    train, heldout = text_data.split_names(documents, args.heldout_fraction)
    return (
        {name: documents[name] for name in train},
        {name: documents[name] for name in heldout},
    )


def make_sampler(name, seed):
    import keras_hub

    samplers = keras_hub.samplers
    if name == "greedy":
        return samplers.GreedySampler()
    if name == "beam":
        return samplers.BeamSampler(num_beams=4)
    if name == "random":
        return samplers.RandomSampler(seed=seed)
    if name == "top_k":
        return samplers.TopKSampler(k=10, seed=seed)
    if name == "top_p":
        return samplers.TopPSampler(p=0.9, seed=seed)
    return samplers.ContrastiveSampler(k=5, alpha=0.6)


def generate_all(causal_lm, prompts, args):
    """{sampler: [continuation of each prompt]}, printed as they come."""
    generations = {}
    for name in args.samplers:
        causal_lm.compile(sampler=make_sampler(name, args.seed))
        outputs = causal_lm.generate(list(prompts), max_length=args.max_length)
        if isinstance(outputs, str):
            outputs = [outputs]
        generations[name] = [str(text) for text in outputs]
        print(f"\n[{name}]")
        for prompt, text in zip(prompts, generations[name]):
            print(f"  {prompt!r} -> {text}")
    return generations


def generate_only(parser, args, started):
    import keras

    from _training import write_summary
    from keras_gmlp.models import gMLPCausalLM

    keras.utils.set_random_seed(args.seed)
    try:
        causal_lm = gMLPCausalLM.from_preset(str(args.preset))
    except Exception as error:
        raise SystemExit(f"--preset {args.preset} could not be loaded: {error}")
    prompts = args.prompt or list(DEFAULT_PROMPTS)
    try:
        generations = generate_all(causal_lm, prompts, args)
    except ValueError as error:
        parser.error(str(error))
    write_text(
        args.output_dir / "generations.json",
        json.dumps({"prompts": prompts, "generations": generations}, indent=2) + "\n",
    )
    write_summary(args.output_dir / "summary.json", args, started, mode="generate",
                  preset=str(args.preset), generations=generations)


def plot_perplexity_by_position(trainer, x, y, path):
    """Held-out perplexity at each position of a window: the more context
    a causal model has, the better it should predict the next token."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from _training import save_figure

    logits = trainer.predict(x, batch_size=128, verbose=0).astype("float64")
    logits -= logits.max(axis=-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    losses = -np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
    real = y > 0
    counts = real.sum(axis=0)
    positions = np.flatnonzero(counts)
    perplexity = np.exp((losses * real).sum(axis=0)[positions] / counts[positions])
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(positions + 1, perplexity, marker=".")
    axis.set_yscale("log")
    axis.set_xlabel("position in the window (tokens of context)")
    axis.set_ylabel("held-out perplexity")
    axis.set_title("Next-token perplexity by position")
    axis.grid(alpha=0.3, which="both")
    figure.tight_layout()
    save_figure(figure, path)


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    if args.preset is not None:
        return generate_only(parser, args, started)
    import keras
    import numpy as np

    import _text_data as text_data
    from _training import EpochSeededBatches
    from _training import fit_verbose
    from _training import plot_history
    from _training import resumable_callbacks
    from _training import save_model
    from _training import write_summary
    from keras_gmlp.models import CausalLMPerplexity
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPCausalLMPreprocessor

    output_dir = args.output_dir
    train_documents, heldout_documents = load_documents(args)
    tokenizer = text_data.train_tokenizer(list(train_documents.values()), args.vocabulary_size)
    vocabulary_size = tokenizer.vocabulary_size()
    start_id, end_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

    def windows(documents):
        tokens = text_data.tokenize(tokenizer, list(documents.values()))
        # One more token than the model sees: inputs and next-token labels.
        rows = text_data.pack_windows(tokens, args.sequence_length + 1, start_id, end_id)
        x = {"token_ids": rows[:, :-1], "padding_mask": (rows[:, :-1] != 0).astype("int32")}
        return x, rows[:, 1:]

    (train_x, train_y), (heldout_x, heldout_y) = windows(train_documents), windows(heldout_documents)
    if len(train_y) == 0 or len(heldout_y) == 0:
        raise SystemExit("The corpus gave no train or no held-out windows: use more text.")
    counts = np.bincount(train_y.ravel(), minlength=vocabulary_size)[:vocabulary_size]
    counts[0] = 0
    probabilities = (counts + 1) / (counts + 1).sum()
    unigram = float(np.exp(-np.log(probabilities[heldout_y[heldout_y > 0]]).mean()))
    print(
        f"Corpus ({args.corpus}): {len(train_documents)} train and {len(heldout_documents)} "
        f"held-out documents, {len(train_y)} and {len(heldout_y)} windows of "
        f"{args.sequence_length} tokens; vocabulary {vocabulary_size} word pieces.",
        flush=True,
    )

    keras.utils.set_random_seed(args.seed)
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim,
        causal=True,
        dropout=args.dropout,
    )
    causal_lm = gMLPCausalLM(
        backbone, gMLPCausalLMPreprocessor(tokenizer, sequence_length=args.sequence_length)
    )
    batches = EpochSeededBatches(train_x, train_y, args.batch_size, args.seed)
    total_steps = args.epochs * len(batches)
    warmup_steps = max(1, total_steps // 10)
    # keras-hub's Task.fit turns its inputs into tf.data; a plain functional
    # model over the same layers trains on the epoch-seeded batches as they are.
    trainer = keras.Model(causal_lm.input, causal_lm.output, name="causal_lm_trainer")
    trainer.compile(
        optimizer=keras.optimizers.AdamW(
            learning_rate=keras.optimizers.schedules.CosineDecay(
                0.0, max(1, total_steps - warmup_steps),
                warmup_target=args.learning_rate, warmup_steps=warmup_steps,
            ),
            weight_decay=args.weight_decay,
            clipnorm=1.0,
        ),
        # Label 0 ([PAD]) marks the positions after a document's end.
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        metrics=[CausalLMPerplexity()],
    )
    callbacks, history = resumable_callbacks(
        output_dir, monitor="val_causal_lm_perplexity", mode="min",
        save=causal_lm.save_to_preset, best_name="best_preset",
    )
    trainer.fit(
        batches,
        epochs=args.epochs,
        validation_data=(heldout_x, heldout_y),
        callbacks=callbacks + [batches.epoch_callback()],
        # The batches are shuffled by (seed, epoch); Keras' own shuffle of
        # their order draws from the global random state.
        shuffle=False,
        verbose=fit_verbose(),
    )
    save_model(causal_lm, output_dir / "final_preset", causal_lm.save_to_preset)
    scores = trainer.evaluate(heldout_x, heldout_y, batch_size=256, verbose=0, return_dict=True)
    perplexity = float(scores["causal_lm_perplexity"])
    plot_history(history, output_dir / "training_curves.png",
                 f"causal {args.model} on the {args.corpus} corpus")
    plot_perplexity_by_position(trainer, heldout_x, heldout_y,
                                output_dir / "perplexity_by_position.png")
    print(
        f"Held-out perplexity {perplexity:.2f} over {int((heldout_y > 0).sum())} "
        f"next tokens (unigram baseline {unigram:.2f}).",
        flush=True,
    )

    prompts = args.prompt or list(DEFAULT_PROMPTS)
    keras.utils.set_random_seed(args.seed)
    generations = generate_all(causal_lm, prompts, args)
    write_text(
        output_dir / "generations.json",
        json.dumps({"prompts": prompts, "generations": generations}, indent=2) + "\n",
    )
    summary = write_summary(
        output_dir / "summary.json", args, started,
        mode="train",
        heldout_perplexity=perplexity,
        unigram_perplexity=unigram,
        heldout_tokens=int((heldout_y > 0).sum()),
        parameters=int(causal_lm.count_params()),
        non_embedding_parameters=int(backbone.count_non_embedding_params()),
        vocabulary_size=vocabulary_size,
        corpus={
            "name": args.corpus,
            "train_documents": len(train_documents),
            "heldout_documents": len(heldout_documents),
            "train_windows": int(len(train_y)),
            "heldout_windows": int(len(heldout_y)),
        },
        best_preset=str(output_dir / "best_preset"),
        final_preset=str(output_dir / "final_preset"),
        epochs_completed=len(history.rows),
        generations=generations,
    )
    print(
        f"\nHeld-out perplexity {perplexity:.2f} (unigram {unigram:.2f}). Presets, "
        f"generations and plots in {output_dir} ({summary['seconds']:.0f} s)."
    )
    return summary


if __name__ == "__main__":
    run(main)
