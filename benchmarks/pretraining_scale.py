"""Pretraining at scale on a 2-core CPU: memory against corpus size on
prose, token shards against the tokenizing pipeline, and the model's
training step against BERT's.

1. Corpora of generated English prose of 10^3 ... 10^6 documents (one to
   four paragraphs of two to six sentences each, about 850 bytes; words
   drawn by their frequency in the Python Language Reference, one word in
   200 a new letter string, as names and typos keep a real corpus'
   vocabulary growing), 10,000 documents a file.
2. `applications/tokenize_corpus.py` on each: documents and tokens per
   second, its peak RSS, and the shards' bytes per token.
3. Peak resident memory of `applications/pretrain_mlm.py` with default
   flags but `--steps` (the vocabulary trained on its default sample;
   `--epochs` would count every window first), once on the text files
   (`--train-files`) and once on their shards (`--token-files`); a
   subprocess each, its peak from `os.wait4`.
4. The input alone, masked batches of 32 windows of 64 tokens with the same
   vocabulary: the tokenizing stream (read, shuffle, tokenize, pack,
   mask) against the shard stream (read windows, shuffle, mask), in
   tokens per second, on the middle corpus.
5. Tokens per second of a training step on that input: the program's
   default gMLP against keras-hub's BertMaskedLM of about equal
   non-embedding size, in a fresh process per backend.

    python benchmarks/pretraining_scale.py            # about 40 minutes
    python benchmarks/pretraining_scale.py --sizes 2000 20000 --backends

Writes benchmarks/pretraining_scale.json (or --output).
"""

import argparse
import collections
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

from _flags import FlagParser

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS_PER_FILE = 10_000
# One word in NOVEL_WORDS is a new letter string (Heaps' law: a real
# corpus keeps meeting words it has not seen).
NOVEL_WORDS = 200


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[2000, 20_000, 200_000, 1_000_000]
    )
    parser.add_argument("--steps", type=int, default=20, help="training steps per run")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs per size and path (median, max)"
    )
    parser.add_argument("--input-batches", type=int, default=300)
    parser.add_argument(
        "--backends",
        nargs="*",
        default=["tensorflow", "jax", "torch"],
        help="backends of the gMLP-against-BERT step comparison (none: skip it)",
    )
    parser.add_argument("--step-batches", type=int, default=30)
    # A child of step_comparison: GLOB VOCABULARY.
    parser.add_argument("--compare-steps", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "pretraining_scale.json")
    )
    return parser.parse_args(argv)


def english_words():
    """(words, probabilities): the word forms of the Python Language
    Reference, by their frequency there."""
    from pydoc_data.topics import topics

    import numpy as np

    text = " ".join(topics.values()).lower()
    counts = collections.Counter(re.findall(r"[a-z]+", text))
    words = sorted(counts)
    frequency = np.array([counts[w] for w in words], dtype="float64")
    return np.array(words, dtype=object), frequency / frequency.sum()


def prose_documents(rng, count, words, probabilities):
    """`count` documents of prose: paragraphs (lines) of sentences."""
    paragraphs = rng.integers(1, 5, size=count)
    sentences = rng.integers(2, 7, size=int(paragraphs.sum()))
    lengths = rng.integers(6, 25, size=int(sentences.sum()))
    drawn = words[rng.choice(len(words), size=int(lengths.sum()), p=probabilities)]
    letters = list("abcdefghijklmnopqrstuvwxyz")
    for index in rng.choice(len(drawn), size=len(drawn) // NOVEL_WORDS):
        drawn[index] = "".join(rng.choice(letters, size=rng.integers(4, 11)))
    ends = iter(range(len(lengths)))
    texts, word, paragraph = [], 0, 0
    for document in range(count):
        lines = []
        for _ in range(paragraphs[document]):
            line = []
            for _ in range(sentences[paragraph]):
                length = lengths[next(ends)]
                sentence = " ".join(drawn[word : word + length])
                line.append(sentence[:1].upper() + sentence[1:] + ".")
                word += length
            paragraph += 1
            lines.append(" ".join(line))
        texts.append("\n".join(lines))
    return texts


def write_corpus(folder, documents, seed=0):
    """`documents` prose documents, a blank line between them, in files of
    DOCUMENTS_PER_FILE; returns the glob. Drawn file by file: a child's
    peak RSS (`os.wait4`) counts this process' memory at the time it
    starts, which must stay below it."""
    import numpy as np

    folder.mkdir(parents=True)
    words, probabilities = english_words()
    for first in range(0, documents, DOCUMENTS_PER_FILE):
        rng = np.random.default_rng([seed, first])
        count = min(DOCUMENTS_PER_FILE, documents - first)
        texts = prose_documents(rng, count, words, probabilities)
        name = f"part-{first // DOCUMENTS_PER_FILE:05d}.txt"
        (folder / name).write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    return str(folder / "part-*.txt")


def peak_run(program, flags, log_path):
    """Runs applications/<program> with `flags`; returns (peak RSS in MB,
    seconds)."""
    command = [sys.executable, str(ROOT / "applications" / program), *flags]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env
        )
        _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{command} failed; see {log_path}")
    return usage.ru_maxrss / 1024, time.perf_counter() - started


def tokenize(pattern, folder):
    """tokenize_corpus.py on `pattern` into `folder`: its speed, peak RSS
    and the shards' size."""
    peak, seconds = peak_run(
        "tokenize_corpus.py",
        ["--train-files", pattern, "--output-dir", str(folder)],
        folder.parent / f"{folder.name}.log",
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    parts = manifest["parts"].values()
    documents = sum(part["documents"] for part in parts)
    tokens = sum(part["tokens"] for part in parts)
    shard_bytes = sum(path.stat().st_size for path in folder.glob("*/*.npy"))
    return {
        "documents_per_second": documents / seconds,
        "tokens_per_second": tokens / seconds,
        "tokens": tokens,
        "seconds": seconds,
        "peak_rss_mb": peak,
        "shard_bytes_per_token": shard_bytes / tokens,
    }


def training_memory(corpus_flags, steps, output_dir):
    """pretrain_mlm.py with default flags but --steps on `corpus_flags`:
    (peak RSS in MB, summary)."""
    flags = [*corpus_flags, "--steps", str(steps), "--output-dir", str(output_dir)]
    peak, _ = peak_run("pretrain_mlm.py", flags, f"{output_dir}.log")
    return peak, json.loads((output_dir / "summary.json").read_text())


def masked_finish(vocabulary, length):
    """The program's masking of a batch, drawn from (0, step, shard)."""
    import numpy as np

    from keras_gmlp.utils.text_corpus import mask_slots
    from keras_gmlp.utils.text_corpus import mask_tokens

    slots, size = mask_slots(length), len(vocabulary)

    def finish(step, shard, rows):
        rng = np.random.default_rng([0, step, 1, shard])
        return mask_tokens(rows, rng, slots, vocabulary.index("[MASK]"), size)

    return finish


def text_stream(pattern, vocabulary, batch_size=32, length=64):
    """The program's tokenizing train input over `pattern`: a BatchStream
    of masked batches."""
    sys.path.insert(0, str(ROOT / "applications"))
    import tensorflow as tf
    from _text_input import stream
    from _text_input import text_files
    from _text_input import windows

    from keras_gmlp.models import gMLPTokenizer

    tokenizer = gMLPTokenizer(vocabulary=vocabulary, lowercase=True)
    dataset = stream.train_batches(
        text_files.file_documents(text_files.resolve_files(pattern)),
        lambda documents: windows.token_windows(documents, tokenizer, length),
        batch_size,
        0,
        (10_000, 10_000),
    )
    return stream.BatchStream(
        tf.data.Dataset.zip((dataset,)),
        10**9,
        tempfile.mkdtemp(),
        masked_finish(vocabulary, length),
    )


def shard_stream(folder, vocabulary, batch_size=32, length=64):
    """The program's train input over the shards in `folder`."""
    sys.path.insert(0, str(ROOT / "applications"))
    from _token_shards.shard_set import open_shard_set
    from _token_shards.stream import ShardBatchStream

    _, parts = open_shard_set(folder)
    return ShardBatchStream(
        parts["train"],
        length,
        vocabulary.index("[CLS]"),
        batch_size,
        1,
        0,
        period=10**9,
        snapshots=tempfile.mkdtemp(),
        finish=masked_finish(vocabulary, length),
    )


def input_tokens_per_second(stream, batches, batch_size=32, length=64):
    """Tokens per second of a train stream alone, after 20 batches (the
    shuffle buffers filled)."""
    for _ in range(20):
        stream.take()
    started = time.perf_counter()
    for _ in range(batches):
        stream.take()
    return batches * batch_size * length / (time.perf_counter() - started)


def compare_steps(pattern, batches, vocabulary):
    """{model: tokens per second} of gMLP and BERT training steps on the
    same stream, this process' backend; the second of two epochs timed."""
    import keras
    import keras_hub

    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    size, length = len(vocabulary), 64
    models = {
        "gmlp": lambda: gMLPMaskedLM(
            gMLPBackbone(size, 4, 128, 512, max_sequence_length=length),
            preprocessor=None,
        ),
        "bert": lambda: keras_hub.models.BertMaskedLM(
            keras_hub.models.BertBackbone(
                size, 2, 2, 128, 512, max_sequence_length=length
            ),
            preprocessor=None,
        ),
    }
    results = {}
    for name, build in models.items():
        task = build()
        # As the program trains: a functional model over the task's layers
        # (keras-hub's Task.fit takes no generator).
        model = keras.Model(task.input, task.output)
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=0
            ),
        )
        times = []
        timer = keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda epoch, logs, times=times: times.append(
                time.perf_counter()
            ),
            on_epoch_end=lambda epoch, logs, times=times: times.append(
                time.perf_counter()
            ),
        )
        model.fit(
            text_stream(pattern, vocabulary).batches(),
            steps_per_epoch=batches,
            epochs=2,
            verbose=0,
            callbacks=[timer],
        )
        non_embedding = (
            task.backbone.count_params()
            - task.backbone.get_layer("token_embedding").count_params()
        )
        results[name] = {
            "tokens_per_second": batches * 32 * length / (times[3] - times[2]),
            "parameters": int(task.count_params()),
            "backbone_parameters_without_token_embedding": int(non_embedding),
        }
    return results


def step_comparison(pattern, vocabulary_path, args):
    """{backend: compare_steps(...)}, each in a fresh process."""
    table = {}
    for backend in args.backends:
        command = [sys.executable, __file__, "--compare-steps", pattern]
        command += [str(vocabulary_path), "--step-batches", str(args.step_batches)]
        env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(ROOT))
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise SystemExit(f"{backend}: {result.stderr[-2000:]}")
        table[backend] = json.loads(result.stdout.strip().splitlines()[-1])
        print(backend, json.dumps(table[backend]), flush=True)
    return table


def median_row(values):
    return {
        "peak_rss_mb_median": round(statistics.median(values), 1),
        "peak_rss_mb_max": round(max(values), 1),
    }


def size_row(folder, size, args):
    """One corpus size: its tokenization, and the program's peak memory
    on its files and on its shards."""
    pattern = write_corpus(folder / f"corpus-{size}", size)
    shards = folder / f"shards-{size}"
    row = {"documents": size, "tokenize": tokenize(pattern, shards)}
    for path, flags in (
        ("files", ["--train-files", pattern]),
        ("shards", ["--token-files", str(shards)]),
    ):
        runs = [
            training_memory(flags, args.steps, folder / f"run-{size}-{path}-{r}")
            for r in range(args.repeats)
        ]
        row[path] = median_row([peak for peak, _ in runs])
        row[path]["input_share"] = statistics.median(
            summary["throughput"]["input_share"] for _, summary in runs
        )
    print(json.dumps(row), flush=True)
    return row, pattern, shards


def main(argv=None):
    args = parse_args(argv)
    if args.compare_steps:  # a child of step_comparison
        pattern, vocabulary = args.compare_steps
        tokens = pathlib.Path(vocabulary).read_text().splitlines()
        print(json.dumps(compare_steps(pattern, args.step_batches, tokens)))
        return
    results = {"training_steps": args.steps, "memory": []}
    results["backend"] = os.environ.get("KERAS_BACKEND", "tensorflow")
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        corpora = {}
        for size in args.sizes:
            row, *corpora[size] = size_row(folder, size, args)
            results["memory"].append(row)
        middle = sorted(args.sizes)[len(args.sizes) // 2]
        pattern, shards = corpora[middle]
        vocabulary = (shards / "vocabulary.txt").read_text().splitlines()
        results["input_tokens_per_second"] = {
            "documents": middle,
            "tokenizing": input_tokens_per_second(
                text_stream(pattern, vocabulary), args.input_batches
            ),
            "shards": input_tokens_per_second(
                shard_stream(shards, vocabulary), args.input_batches * 10
            ),
        }
        print(json.dumps(results["input_tokens_per_second"]), flush=True)
        results["steps"] = step_comparison(pattern, shards / "vocabulary.txt", args)
    print(json.dumps(results, indent=2))
    pathlib.Path(args.output).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
