"""Trains a causal gMLP or aMLP language model and generates text with it.

The default corpus is the Python Language Reference that ships with every
CPython (`pydoc_data.topics`); --corpus docstrings uses the docstrings of
the standard library's modules instead (read from its .py files);
--train-files reads local text files and --dataset a tensorflow-datasets
corpus, both as a stream. The documents are split into train, validation
and test sets, a WordPiece vocabulary is trained on the first
--vocabulary-sample train documents (or read from --vocabulary), and the
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
--seed. --quantize int8 (or float8) generates with a quantized copy of the
model (`Model.quantize`), and after training reports its test perplexity
beside float32's; the presets stay float.

Outputs in --output-dir: best_preset/ (lowest validation perplexity) and
final_preset/ (keras-hub presets with the tokenizer), history.csv,
training_curves.png, perplexity_by_position.png (test), generations.json,
summary.json (which split is which) and run_state.json.

    python applications/train_causal_lm.py                # a few minutes on a CPU
    python applications/train_causal_lm.py --preset outputs/train_causal_lm/final_preset \\
        --prompt "the with statement" --prompt "a class definition"
"""

import json
import pathlib
import time

from _shared.files import write_text
from _shared.flag_values import positive_int
from _shared.flags import add_quantize_flag
from _shared.flags import flag_given
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import open_run
from _text_input.flags import CORPUS_RUN_FLAGS
from _text_input.flags import add_corpus_flags
from _text_input.flags import check_corpus_flags
from _text_training.flags import LANGUAGE_MODEL_FAST
from _text_training.flags import STEP_RUN_FLAGS
from _text_training.flags import add_optimizer_flags
from _text_training.flags import add_step_flags
from _text_training.flags import check_language_model_flags
from _text_training.flags import check_step_flags

MODELS = ("gmlp", "amlp")
CORPORA = ("reference", "docstrings")
SAMPLERS = ("greedy", "beam", "random", "top_k", "top_p", "contrastive")
DEFAULT_PROMPTS = ("the with statement", "a class definition", "an exception is")
FAST = {**LANGUAGE_MODEL_FAST, "max_length": 16}
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
    "corpus",
    "fast",
    *CORPUS_RUN_FLAGS,
    *STEP_RUN_FLAGS,
)


def build_parser():
    parser = make_parser(__doc__, "outputs/train_causal_lm")
    parser.set_defaults(epochs=8, batch_size=32)
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="gmlp",
        help="gMLP, or aMLP (gMLP with a tiny causal attention)",
    )
    parser.add_argument("--num-layers", type=positive_int, default=4, help="blocks")
    parser.add_argument("--hidden-dim", type=positive_int, default=128, help="d_model")
    parser.add_argument(
        "--intermediate-dim", type=positive_int, default=512, help="d_ffn, even"
    )
    parser.add_argument(
        "--attention-dim",
        type=positive_int,
        default=32,
        help="aMLP's tiny attention size",
    )
    parser.add_argument(
        "--sequence-length",
        type=positive_int,
        default=64,
        help="tokens per training window and most tokens generated",
    )
    parser.add_argument(
        "--vocabulary-size",
        type=positive_int,
        default=1200,
        help="WordPiece vocabulary size to train (a small corpus may give fewer)",
    )
    parser.add_argument(
        "--corpus",
        choices=CORPORA,
        default="reference",
        help="the Python reference, or the standard library's docstrings",
    )
    add_optimizer_flags(parser)
    add_corpus_flags(parser, "--corpus")
    add_step_flags(parser)
    add_generation_flags(parser)
    add_quantize_flag(parser, "the model that generates")
    return parser


def add_generation_flags(parser):
    """The flags of generation: a preset, prompts, length and samplers."""
    parser.add_argument(
        "--preset", help="generate with this causal preset instead of training"
    )
    parser.add_argument(
        "--prompt",
        action="append",
        help="a text to continue; repeat for several "
        f"(default: {' | '.join(DEFAULT_PROMPTS)})",
    )
    parser.add_argument(
        "--max-length",
        type=positive_int,
        default=48,
        help="generated length in tokens, prompt included; at most "
        "the model's sequence length",
    )
    parser.add_argument(
        "--samplers",
        default=",".join(SAMPLERS),
        help="comma-separated keras-hub samplers to generate with",
    )


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.samplers = [name.strip() for name in args.samplers.split(",") if name.strip()]
    unknown = [name for name in args.samplers if name not in SAMPLERS]
    if unknown or not args.samplers:
        parser.error(
            f"--samplers takes names from {SAMPLERS}; received {unknown or 'none'}"
        )
    if args.prompt is not None and not all(p.strip() for p in args.prompt):
        parser.error("--prompt must not be empty")
    if args.fast:
        for name, value in FAST.items():
            if hasattr(args, name) and not flag_given(
                argv, "--" + name.replace("_", "-")
            ):
                setattr(args, name, value)
        if not flag_given(argv, "--epochs"):
            args.epochs = 1
    check_language_model_flags(parser, args)
    check_corpus_flags(parser, args)
    check_step_flags(parser, args, argv)
    if args.preset is not None:
        check_preset(parser, args, argv)
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


def check_preset(parser, args, argv):
    """--preset must hold a causal keras-hub preset; --max-length is cut
    to its max_sequence_length unless given."""
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
        parser.error(
            f"--preset {args.preset}: config.json is not a keras-hub backbone config"
        )
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


def bundled_documents(args):
    """{name: text} of --corpus."""
    from keras_gmlp.utils import text_corpus

    if args.corpus == "reference":
        return text_corpus.reference_documents()
    documents = {}
    for name in text_corpus.stdlib_module_files():
        text = "\n\n".join(text_corpus.module_docstrings(name))
        if len(text) > 200:
            documents[name] = text
    return documents


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


def write_generations(output_dir, prompts, generations):
    write_text(
        output_dir / "generations.json",
        json.dumps({"prompts": prompts, "generations": generations}, indent=2) + "\n",
    )


def generate_only(parser, args, started):
    import keras
    from _shared.report import write_summary

    from keras_gmlp.models import gMLPCausalLM

    keras.utils.set_random_seed(args.seed)
    try:
        causal_lm = gMLPCausalLM.from_preset(str(args.preset))
    except Exception as error:
        raise SystemExit(
            f"--preset {args.preset} could not be loaded: {error}"
        ) from None
    if args.quantize:
        from _shared.serving import quantized_copy

        causal_lm = quantized_copy(causal_lm, args.quantize)
    prompts = args.prompt or list(DEFAULT_PROMPTS)
    try:
        generations = generate_all(causal_lm, prompts, args)
    except ValueError as error:
        parser.error(str(error))
    write_generations(args.output_dir, prompts, generations)
    return write_summary(
        args.output_dir / "summary.json",
        args,
        started,
        mode="generate",
        preset=str(args.preset),
        quantize=args.quantize,
        generations=generations,
    )


def plot_perplexity_by_position(trainer, x, y, path):
    """Held-out perplexity at each position of a window: the more context
    a causal model has, the better it should predict the next token."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import plain_log_axis
    from _shared.report import save_figure

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
    plain_log_axis(axis)
    axis.set_xlabel("position in the window (tokens of context)")
    axis.set_ylabel("held-out perplexity")
    axis.set_title("Next-token perplexity by position")
    axis.grid(alpha=0.3, which="both")
    figure.tight_layout()
    save_figure(figure, path)


def inputs_and_labels(rows):
    """A causal LM's inputs and next-token labels of windows one token
    longer than the model sees."""
    x = {
        "token_ids": rows[:, :-1],
        "padding_mask": (rows[:, :-1] != 0).astype("int32"),
    }
    return x, rows[:, 1:]


def next_token_corpus(parser, args, run):
    """The tokenizer, the train documents' source, the validation and
    test windows as (inputs, next-token labels), the train token counts,
    and the facts the summary reports. Fills in the step flags."""
    from _text_input.corpus import corpus_facts
    from _text_input.corpus import language_model_corpus
    from _text_input.corpus import language_model_sources
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps

    sources = language_model_sources(parser, args, lambda: bundled_documents(args))
    # One more token than the model sees: inputs and next-token labels.
    tokenizer, heldout, counts, per_epoch = language_model_corpus(
        args, run, sources, args.sequence_length + 1
    )
    resolve_steps(parser, args, per_epoch)
    name = args.dataset or args.train_files or args.corpus
    corpus = corpus_facts(name, sources, heldout, per_epoch, args.batch_size)
    print_corpus(
        f"Corpus ({name})", corpus, args.sequence_length, tokenizer.vocabulary_size()
    )
    data = {part: inputs_and_labels(rows) for part, rows in heldout.items()}
    return tokenizer, sources["train"], data, counts, corpus


def train(args, run, tokenizer, train_source, validation):
    """Builds and trains the causal LM, choosing the checkpoint on the
    validation windows; returns (causal_lm, trainer, history, initial
    Toeplitz scores)."""
    import keras
    from _text_input.windows import token_windows
    from _text_training.training import fit_language_model
    from _text_training.training import training_stream

    from keras_gmlp.models import CausalLMPerplexity
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPCausalLMPreprocessor

    keras.utils.set_random_seed(args.seed)
    backbone = gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim,
        causal=True,
        dropout=args.dropout,
    )
    causal_lm = gMLPCausalLM(
        backbone,
        gMLPCausalLMPreprocessor(tokenizer, sequence_length=args.sequence_length),
    )
    stream = training_stream(
        args,
        train_source.dataset(),
        lambda documents: token_windows(documents, tokenizer, args.sequence_length + 1),
        lambda step, shard, rows: inputs_and_labels(rows),
    )
    trainer, history, initial_scores = fit_language_model(
        causal_lm,
        stream,
        validation,
        args,
        run,
        [CausalLMPerplexity()],
        monitor="val_causal_lm_perplexity",
    )
    return causal_lm, trainer, history, initial_scores


def evaluate_and_plot(args, trainer, history, heldout):
    """Test perplexity of the chosen weights, the training curves and the
    perplexity by position; returns the perplexity."""
    from _shared.distribute import evaluation_data
    from _shared.distribute import local_copy
    from _shared.report import plot_history

    heldout_x, heldout_y = heldout
    x, y, weights = evaluation_data(heldout_x, heldout_y, ignored_label=0)
    scores = trainer.evaluate(
        x, y, sample_weight=weights, batch_size=256, verbose=0, return_dict=True
    )
    trainer = local_copy(trainer)
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"causal {args.model} on the {args.corpus} corpus",
    )
    plot_perplexity_by_position(
        trainer, heldout_x, heldout_y, args.output_dir / "perplexity_by_position.png"
    )
    return float(scores["causal_lm_perplexity"])


def quantized_generator(args, causal_lm, heldout):
    """The --quantize copy of `causal_lm`, and {"heldout_perplexity_<mode>":
    its test perplexity}, counted as the float model's."""
    import keras
    from _shared.serving import quantized_copy

    from keras_gmlp.models import CausalLMPerplexity

    quantized = quantized_copy(causal_lm, args.quantize)
    x, y = heldout
    logits = keras.Model(quantized.input, quantized.output).predict(
        x, batch_size=128, verbose=0
    )
    metric = CausalLMPerplexity()
    metric.update_state(y, logits)
    perplexity = float(metric.result())
    print(f"Test perplexity {perplexity:.2f} with {args.quantize} weights.", flush=True)
    return quantized, {f"heldout_perplexity_{args.quantize}": perplexity}


def generate_and_write(args, causal_lm, heldout):
    """The generations of the prompts (--prompt, or the defaults), also
    written to generations.json, and the --quantize copy's test scores."""
    import keras
    from _shared.distribute import local_copy

    generator, scores = local_copy(causal_lm), {}
    if args.quantize:
        generator, scores = quantized_generator(args, generator, heldout)
    prompts = args.prompt or list(DEFAULT_PROMPTS)
    keras.utils.set_random_seed(args.seed)
    generations = generate_all(generator, prompts, args)
    write_generations(args.output_dir, prompts, generations)
    return generations, scores


def main(argv=None):
    parser, args = parse_args(argv)
    started = time.time()
    if args.preset is not None:
        quiet_tensorflow_logs()
        return generate_only(parser, args, started)
    # Before TensorFlow loads: a finished run says so at once.
    run_state = open_run(args, MODEL_FLAGS)
    quiet_tensorflow_logs()
    import keras
    from _shared.distribute import start
    from _text_training.training import spatial_filter_report
    from _text_training.training import write_language_model_summary

    from keras_gmlp.utils.text_corpus import unigram_perplexity_of_counts

    placement = start(parser, args)
    keras.config.set_dtype_policy(args.dtype_policy)
    output_dir = args.output_dir
    tokenizer, train_source, data, counts, corpus = next_token_corpus(
        parser, args, run_state
    )
    heldout_y = data["test"][1]
    unigram = unigram_perplexity_of_counts(counts, heldout_y, 1)
    with placement.scope():
        causal_lm, trainer, history, initial_scores = train(
            args, run_state, tokenizer, train_source, data["validation"]
        )
        perplexity = evaluate_and_plot(args, trainer, history, data["test"])
    heldout_tokens = int((heldout_y > 0).sum())
    print(
        f"Test perplexity {perplexity:.2f} over {heldout_tokens} "
        f"next tokens (unigram baseline {unigram:.2f}).",
        flush=True,
    )
    generations, scores = generate_and_write(args, causal_lm, data["test"])
    summary = write_language_model_summary(
        args,
        started,
        causal_lm,
        history,
        {
            "mode": "train",
            "heldout_perplexity": perplexity,
            "unigram_perplexity": unigram,
            "heldout_tokens": heldout_tokens,
            **scores,
        },
        corpus,
        toeplitz_scores=spatial_filter_report(
            causal_lm, initial_scores, output_dir / "spatial_filters.png"
        ),
        generations=generations,
    )
    run_state.finish()
    print(
        f"\nTest perplexity {perplexity:.2f} (unigram {unigram:.2f}). Presets, "
        f"generations and plots in {output_dir} ({summary['seconds']:.0f} s)."
    )
    return summary


if __name__ == "__main__":
    run(main)
