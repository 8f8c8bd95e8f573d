"""Pretraining at scale on a 2-core CPU: memory against corpus size, and
the input pipeline's speed against what the model consumes.

1. Peak resident memory of `applications/pretrain_mlm.py --train-files` on
   generated corpora of 10^3 ... 10^6 documents, the same number of steps
   each (a subprocess per size; its peak RSS from `os.wait4`). The corpus
   streams, so the memory should stay flat.
2. The input pipeline alone (`text_stream`: read, shuffle, tokenize, pack,
   batch, mask), in tokens per second, against the tokens per second the
   default model trains on (from the 10^5 run's summary), and the share
   of the training time spent taking input.

    python benchmarks/pretraining_scale.py            # about 5 minutes
    python benchmarks/pretraining_scale.py --sizes 1000 10000 --steps 10

Writes benchmarks/pretraining_scale.json (or --output).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = [f"w{i}" for i in range(2000)]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DOCUMENTS_PER_FILE = 100_000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--steps", type=int, default=40, help="training steps per size")
    parser.add_argument("--input-batches", type=int, default=300)
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "pretraining_scale.json")
    )
    return parser.parse_args(argv)


def write_corpus(folder, documents, seed=0):
    """`documents` documents of Zipf-distributed words (10 to 200 each),
    a blank line between them, in files of DOCUMENTS_PER_FILE; returns the
    glob."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    ranks = np.minimum(rng.zipf(1.3, size=documents * 120), len(WORDS)) - 1
    lengths = rng.integers(10, 200, size=documents)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    words = np.array(WORDS)
    for first in range(0, documents, DOCUMENTS_PER_FILE):
        last = min(documents, first + DOCUMENTS_PER_FILE)
        with open(folder / f"part-{first // DOCUMENTS_PER_FILE:04d}.txt", "w") as file:
            for index in range(first, last):
                piece = ranks[starts[index] % len(ranks) :][: lengths[index]]
                file.write(" ".join(words[piece]) + "\n\n")
    return str(folder / "part-*.txt")


def peak_memory_run(pattern, vocabulary, steps, output_dir):
    """Runs the pretraining program; returns (peak RSS in MB, summary)."""
    command = [
        sys.executable,
        str(ROOT / "applications" / "pretrain_mlm.py"),
        "--train-files", pattern,
        "--vocabulary", vocabulary,
        "--vocabulary-sample", "1000",
        "--steps", str(steps),
        "--eval-every", str(steps),
        "--eval-batches", "4",
        "--output-dir", str(output_dir),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(output_dir.parent / f"{output_dir.name}.log", "w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env
        )
        _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{command} failed; see {log.name}")
    summary = json.loads((output_dir / "summary.json").read_text())
    return usage.ru_maxrss / 1024, summary


def input_tokens_per_second(pattern, vocabulary, batches, batch_size=32, length=64):
    """Tokens per second of the program's input pipeline alone."""
    sys.path.insert(0, str(ROOT / "applications"))
    import numpy as np
    from _shared import text_stream

    from keras_gmlp.models import gMLPTokenizer
    from keras_gmlp.utils.text_corpus import mask_slots
    from keras_gmlp.utils.text_corpus import mask_tokens

    tokenizer = gMLPTokenizer(vocabulary=vocabulary, lowercase=True)
    paths = text_stream.resolve_files(pattern)
    dataset = text_stream.train_batches(
        text_stream.file_documents(paths),
        lambda documents: text_stream.token_windows(documents, tokenizer, length),
        batch_size,
        0,
        (10_000, 10_000),
    )
    slots = mask_slots(length)

    def finish(step, rows):
        rng = np.random.default_rng([0, step, 1])
        return mask_tokens(rows, rng, slots, 4, len(vocabulary))

    with tempfile.TemporaryDirectory() as folder:
        stream = text_stream.BatchStream(dataset, 10**9, folder, finish)
        iterator = stream.batches()
        for _ in range(20):  # fill the shuffle buffers
            next(iterator)
        started = time.perf_counter()
        for _ in range(batches):
            next(iterator)
        seconds = time.perf_counter() - started
    return batches * batch_size * length / seconds


def main(argv=None):
    args = parse_args(argv)
    results = {
        "steps": args.steps,
        "memory": [],
        "backend": os.environ.get("KERAS_BACKEND", "tensorflow"),
    }
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        vocabulary_path = folder / "vocab.txt"
        vocabulary_path.write_text("\n".join(SPECIAL + WORDS) + "\n")
        patterns = {}
        for size in args.sizes:
            patterns[size] = write_corpus(folder / f"corpus-{size}", size)
            peak, summary = peak_memory_run(
                patterns[size], str(vocabulary_path), args.steps, folder / f"run-{size}"
            )
            row = {
                "documents": size,
                "peak_rss_mb": round(peak, 1),
                "tokens_per_second": summary["throughput"]["tokens_per_second"],
                "input_share": summary["throughput"]["input_share"],
            }
            results["memory"].append(row)
            print(json.dumps(row), flush=True)
        middle = sorted(args.sizes)[len(args.sizes) // 2]
        results["input_pipeline_tokens_per_second"] = input_tokens_per_second(
            patterns[middle], SPECIAL + WORDS, args.input_batches
        )
    print(json.dumps(results, indent=2))
    pathlib.Path(args.output).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
