"""Pretraining at scale on a 2-core CPU: memory against corpus size, and
the input pipeline's speed against what the model consumes.

1. Peak resident memory of `applications/pretrain_mlm.py --train-files` on
   generated corpora of 10^3 ... 10^6 documents, the same number of steps
   each (a subprocess per size; its peak RSS from `os.wait4`). The corpus
   streams, so the memory should stay flat.
2. The input pipeline alone (`_text_input`: read, shuffle, tokenize, pack,
   batch, mask), in tokens per second, against the tokens per second the
   default model trains on (from the middle size's run), and the share of
   the training time spent taking input.
3. Tokens per second of a training step on that pipeline: the program's
   default gMLP (4 blocks, width 128, d_ffn 512, 64 tokens) against
   keras-hub's BertMaskedLM of about equal non-embedding size (2 layers,
   width 128, 2 heads, d_ffn 512), in a fresh process per backend.

    python benchmarks/pretraining_scale.py            # about 5 minutes
    python benchmarks/pretraining_scale.py --sizes 1000 10000 --steps 10

Writes benchmarks/pretraining_scale.json (or --output).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from _flags import FlagParser

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = [f"w{i}" for i in range(2000)]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
DOCUMENTS_PER_FILE = 100_000


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--steps", type=int, default=40, help="training steps per size")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per size (median and max reported)"
    )
    parser.add_argument("--input-batches", type=int, default=300)
    parser.add_argument(
        "--backends",
        nargs="*",
        default=["tensorflow", "jax", "torch"],
        help="backends of the gMLP-against-BERT step comparison (none: skip it)",
    )
    parser.add_argument("--step-batches", type=int, default=30)
    parser.add_argument("--compare-steps", metavar="GLOB", help=argparse.SUPPRESS)
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "pretraining_scale.json")
    )
    return parser.parse_args(argv)


def write_corpus(folder, documents, seed=0):
    """`documents` documents of Zipf-distributed words (10 to 200 each),
    a blank line between them, in files of DOCUMENTS_PER_FILE; returns the
    glob. Drawn file by file: a child's peak RSS (`os.wait4`) counts this
    process' memory at the time it starts, which must stay below it."""
    import numpy as np

    folder.mkdir(parents=True)
    words = np.array(WORDS)
    for first in range(0, documents, DOCUMENTS_PER_FILE):
        rng = np.random.default_rng([seed, first])
        count = min(DOCUMENTS_PER_FILE, documents - first)
        lengths = rng.integers(10, 200, size=count)
        ranks = np.minimum(rng.zipf(1.3, size=int(lengths.sum())), len(WORDS)) - 1
        starts = np.concatenate([[0], np.cumsum(lengths)])
        with open(folder / f"part-{first // DOCUMENTS_PER_FILE:04d}.txt", "w") as file:
            for index in range(count):
                piece = ranks[starts[index] : starts[index + 1]]
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
    _, generator = masked_stream(pattern, vocabulary, batch_size, length)
    for _ in range(20):  # fill the shuffle buffers
        next(generator)
    started = time.perf_counter()
    for _ in range(batches):
        next(generator)
    return batches * batch_size * length / (time.perf_counter() - started)


def masked_stream(pattern, vocabulary, batch_size=32, length=64):
    """The program's train input over `pattern`: a BatchStream of masked
    batches and its `batches()` generator."""
    sys.path.insert(0, str(ROOT / "applications"))
    import numpy as np
    from _text_input import stream as text_stream
    from _text_input import text_files
    from _text_input import windows as text_windows

    from keras_gmlp.models import gMLPTokenizer
    from keras_gmlp.utils.text_corpus import mask_slots
    from keras_gmlp.utils.text_corpus import mask_tokens

    tokenizer = gMLPTokenizer(vocabulary=vocabulary, lowercase=True)
    dataset = text_stream.train_batches(
        text_files.file_documents(text_files.resolve_files(pattern)),
        lambda documents: text_windows.token_windows(documents, tokenizer, length),
        batch_size,
        0,
        (10_000, 10_000),
    )
    slots = mask_slots(length)

    def finish(step, rows):
        rng = np.random.default_rng([0, step, 1])
        return mask_tokens(rows, rng, slots, 4, len(vocabulary))

    stream = text_stream.BatchStream(dataset, 10**9, tempfile.mkdtemp(), finish)
    return stream, stream.batches()


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
        _, generator = masked_stream(pattern, vocabulary)
        model.fit(
            generator, steps_per_epoch=batches, epochs=2, verbose=0, callbacks=[timer]
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


def step_comparison(pattern, args):
    """{backend: compare_steps(...)}, each in a fresh process."""
    table = {}
    for backend in args.backends:
        command = [sys.executable, __file__, "--compare-steps", pattern]
        command += ["--step-batches", str(args.step_batches)]
        env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(ROOT))
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise SystemExit(f"{backend}: {result.stderr[-2000:]}")
        table[backend] = json.loads(result.stdout.strip().splitlines()[-1])
        print(backend, json.dumps(table[backend]), flush=True)
    return table


def main(argv=None):
    args = parse_args(argv)
    if args.compare_steps:  # a child of step_comparison
        print(
            json.dumps(
                compare_steps(args.compare_steps, args.step_batches, SPECIAL + WORDS)
            )
        )
        return
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
            runs = [
                peak_memory_run(
                    patterns[size],
                    str(vocabulary_path),
                    args.steps,
                    folder / f"run-{size}-{repeat}",
                )
                for repeat in range(args.repeats)
            ]
            peaks = [peak for peak, _ in runs]
            row = {
                "documents": size,
                "peak_rss_mb_median": round(statistics.median(peaks), 1),
                "peak_rss_mb_max": round(max(peaks), 1),
                "tokens_per_second": statistics.median(
                    summary["throughput"]["tokens_per_second"] for _, summary in runs
                ),
                "input_share": statistics.median(
                    summary["throughput"]["input_share"] for _, summary in runs
                ),
            }
            results["memory"].append(row)
            print(json.dumps(row), flush=True)
        middle = sorted(args.sizes)[len(args.sizes) // 2]
        results["input_pipeline_tokens_per_second"] = input_tokens_per_second(
            patterns[middle], SPECIAL + WORDS, args.input_batches
        )
        results["steps"] = step_comparison(patterns[middle], args)
    print(json.dumps(results, indent=2))
    pathlib.Path(args.output).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
