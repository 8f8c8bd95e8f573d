"""The pretraining program's training speed against the bare model's:
tokens per second of `applications/pretrain_mlm.py --token-files` (its
input stream, masking, prefetching thread, callbacks and checkpoints)
against a loop of `train_on_batch` on batches made beforehand, of the same
model, batch, precision, optimizer and loss, on each backend.

1. `tokenize_corpus.py` on its default corpus (the Python Language
   Reference), once, into shards.
2. Per backend, in a fresh process each: the program for --steps steps, a
   checkpoint every --period steps; its tokens per second is the median of
   its periods' (history.csv) after the first (which compiles). The
   seconds each checkpoint stopped training are read from its log.
3. The bare loop in a fresh process: the program's own model, optimizer
   and loss (`_masked_lm.model`, `_text_training.training`), on batches
   taken from the program's stream before timing; `--period` steps of
   warm-up, then the same number of steps as the program's timed periods.

    .venv/bin/python benchmarks/program_step.py                 # about 5 minutes
    .venv/bin/python benchmarks/program_step.py --backends jax --steps 200 \\
        --program-flags --dtype-policy mixed_bfloat16

Writes benchmarks/program_step.json (or --output).
"""

import argparse
import csv
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
APPLICATIONS = ROOT / "applications"


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["jax", "torch"])
    parser.add_argument("--steps", type=int, default=300, help="program steps")
    parser.add_argument(
        "--period", type=int, default=50, help="steps per checkpoint period"
    )
    parser.add_argument(
        "--program-flags",
        nargs=argparse.REMAINDER,
        default=[],
        help="more pretrain_mlm.py flags (model, batch, precision), last",
    )
    parser.add_argument("--output", default=str(ROOT / "benchmarks/program_step.json"))
    parser.add_argument("--bare", help=argparse.SUPPRESS)  # a worker's JSON
    return parser.parse_args(argv)


def program_flags(args, shards, output_dir):
    return [
        "--token-files",
        str(shards),
        "--steps",
        str(args.steps),
        "--save-every",
        str(args.period),
        "--eval-every",
        str(args.steps),
        "--eval-batches",
        "1",
        "--output-dir",
        str(output_dir),
        *args.program_flags,
    ]


def environment(backend):
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=path)


def program_row(args, shards, backend, folder):
    """The program's tokens per second (median of the periods after the
    first), its seconds to the first step, and the seconds its checkpoints
    stopped training."""
    output_dir = folder / f"program-{backend}"
    log = subprocess.run(
        [sys.executable, str(APPLICATIONS / "pretrain_mlm.py")]
        + program_flags(args, shards, output_dir),
        env=environment(backend),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with open(output_dir / "history.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    speeds = [float(row["tokens_per_second"]) for row in rows[1:]]
    summary = json.loads((output_dir / "summary.json").read_text())
    pauses = [float(s) for s in re.findall(r"Checkpoint saved in ([\d.]+) s", log)]
    flags = summary["flags"]
    tokens_per_period = args.period * flags["batch_size"] * flags["sequence_length"]
    return {
        "tokens_per_second": statistics.median(speeds),
        "periods_timed": len(speeds),
        "input_share": statistics.median(float(r["input_share"]) for r in rows[1:]),
        "seconds_to_first_step": summary["seconds_to_first_step"],
        "checkpoint_seconds": pauses,
        "period_seconds": tokens_per_period / statistics.median(speeds),
    }


def bare_row(args, shards, backend, folder):
    flags = program_flags(args, shards, folder / f"bare-{backend}")
    result = subprocess.run(
        [sys.executable, __file__, "--bare", json.dumps(flags)]
        + ["--steps", str(args.steps), "--period", str(args.period)],
        env=environment(backend),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def bare_tokens_per_second(flags, steps, period):
    """The worker: `train_on_batch` of the program's model on batches made
    beforehand; tokens per second of the steps the program's periods after
    the first take."""
    sys.path.insert(0, str(APPLICATIONS))
    import pretrain_mlm
    from _masked_lm import recipe
    from _shared.run_state import open_run

    parser, args = pretrain_mlm.parse_args(flags)
    run = open_run(args, recipe.MODEL_FLAGS)
    args.output_dir = pathlib.Path(args.output_dir)
    import keras
    from _masked_lm.data import masked_corpus
    from _masked_lm.data import masking
    from _masked_lm.model import build_masked_lm
    from _text_training.training import compiled_trainer
    from _text_training.training import language_model_compile_args
    from _text_training.training import language_model_stream

    from keras_gmlp.models import MaskedLMAccuracy
    from keras_gmlp.models import MaskedLMPerplexity

    keras.config.set_dtype_policy(args.dtype_policy)
    tokenizer, train, masked, _, _ = masked_corpus(parser, args, run)
    keras.utils.set_random_seed(args.seed)
    model = build_masked_lm(args, tokenizer.vocabulary_size())
    num_slots = masked["validation"][1].shape[1]
    finish = masking(args, tokenizer, num_slots)
    stream = language_model_stream(args, train, tokenizer, args.sequence_length, finish)
    batches = [stream.take() for _ in range(16)]
    metrics = [MaskedLMAccuracy(), MaskedLMPerplexity()]
    trainer = compiled_trainer(model, args, language_model_compile_args(metrics))
    for step in range(period):
        trainer.train_on_batch(*batches[step % len(batches)])
    timed = steps - period
    started = time.perf_counter()
    for step in range(timed):
        trainer.train_on_batch(*batches[step % len(batches)])
    seconds = time.perf_counter() - started
    tokens = timed * args.batch_size * args.sequence_length
    return {
        "tokens_per_second": tokens / seconds,
        "steps_timed": timed,
        "save_weights_seconds": seconds_to_save_weights(trainer, args.output_dir),
        "orbax_checkpoint_seconds": orbax_stop_seconds(trainer, args.output_dir),
    }


def seconds_to_save_weights(trainer, folder):
    """The seconds `save_weights` (the programs' checkpoint: weights and
    optimizer in one .weights.h5) holds training up."""
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    trainer.save_weights(str(folder / "checkpoint.weights.h5"))
    return time.perf_counter() - started


def orbax_stop_seconds(trainer, folder):
    """[seconds keras.callbacks.OrbaxCheckpoint's epoch-end save holds
    training up, seconds until its background write is done] of its first
    save (which sets Orbax up) and its second, or None without
    orbax-checkpoint."""
    import keras

    try:
        checkpoint = keras.callbacks.OrbaxCheckpoint(str(folder / "orbax"))
    except ImportError:
        return None
    checkpoint.set_model(trainer)
    saves = []
    for epoch in range(2):
        started = time.perf_counter()
        checkpoint.on_epoch_end(epoch, {})
        stopped = time.perf_counter() - started
        checkpoint.wait_until_finished()
        saves.append([stopped, time.perf_counter() - started])
    return saves


def main(argv=None):
    args = parse_args(argv)
    if args.bare:
        row = bare_tokens_per_second(json.loads(args.bare), args.steps, args.period)
        print(json.dumps(row))
        return row
    with tempfile.TemporaryDirectory() as scratch:
        folder = pathlib.Path(scratch)
        shards = folder / "shards"
        subprocess.run(
            [sys.executable, str(APPLICATIONS / "tokenize_corpus.py")]
            + ["--output-dir", str(shards)],
            env=environment("jax"),
            capture_output=True,
            check=True,
        )
        rows = {}
        for backend in args.backends:
            program = program_row(args, shards, backend, folder)
            bare = bare_row(args, shards, backend, folder)
            ratio = program["tokens_per_second"] / bare["tokens_per_second"]
            rows[backend] = {"program": program, "bare": bare, "ratio": ratio}
            print(
                f"{backend}: program {program['tokens_per_second']:,.0f} tokens/s, "
                f"bare train_on_batch {bare['tokens_per_second']:,.0f} "
                f"({ratio:.3f}x); input {program['input_share']:.1%}; first step "
                f"after {program['seconds_to_first_step']:.1f} s; checkpoints "
                f"{program['checkpoint_seconds']} s per "
                f"{program['period_seconds']:.1f} s period; bare save_weights "
                f"{bare['save_weights_seconds']:.2f} s, OrbaxCheckpoint "
                f"{bare['orbax_checkpoint_seconds']} s (stop, done)",
                flush=True,
            )
    result = {
        "command": ".venv/bin/python benchmarks/program_step.py "
        + " ".join(argv or sys.argv[1:]),
        "steps": args.steps,
        "period": args.period,
        "program_flags": args.program_flags,
        "rows": rows,
    }
    pathlib.Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
