"""Training steps per second with 1 and 2 processes on one machine.

Runs `applications/pretrain_mlm.py` (the default small gMLP, batch 32 of
64 tokens, the bundled corpus) for --steps steps: once as one process
reading both input shards (`--input-shards 2`), and once as two processes
on 127.0.0.1 (`--distribute data --num-processes 2`, JAX's distributed
runtime with gloo collectives), which train on the same global batches.
The rate is the second checkpoint period's (the first holds compilation),
from history.csv's tokens per second; --repeats runs each, medians
reported.

    python benchmarks/multi_process.py              # about 10 minutes
    python benchmarks/multi_process.py --steps 20 --repeats 1

Writes benchmarks/multi_process.json (or --output).
"""

import csv
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile

from _flags import FlagParser

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENS_PER_STEP = 32 * 64


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="steps per run (even)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "multi_process.json")
    )
    return parser.parse_args(argv)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_processes(args, count, folder):
    """Runs one training with `count` JAX processes; returns its steps/s."""
    flags = [
        sys.executable,
        str(ROOT / "applications" / "pretrain_mlm.py"),
        "--steps",
        str(args.steps),
        "--save-every",
        str(args.steps // 2),
        "--eval-every",
        str(args.steps),
        "--input-shards",
        "2",
        "--output-dir",
        str(folder),
    ]
    coordinator = f"127.0.0.1:{free_port()}"
    commands = [
        flags
        if count == 1
        else flags
        + [
            "--distribute",
            "data",
            "--num-processes",
            str(count),
            "--process-id",
            str(index),
            "--coordinator",
            coordinator,
        ]
        for index in range(count)
    ]
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2")
    processes = [
        subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for c in commands
    ]
    for process in processes:
        _, error = process.communicate(timeout=3600)
        if process.returncode:
            raise SystemExit(error.decode()[-2000:])
    with open(folder / "history.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return float(rows[-1]["tokens_per_second"]) / TOKENS_PER_STEP


def main(argv=None):
    args = parse_args(argv)
    rates = {1: [], 2: []}
    for repeat in range(args.repeats):
        for count in (1, 2):
            with tempfile.TemporaryDirectory() as folder:
                rate = run_processes(args, count, pathlib.Path(folder) / "run")
            rates[count].append(rate)
            print(f"repeat {repeat + 1}: {count} process(es): {rate:.2f} steps/s")
    result = {
        "backend": "jax",
        "steps": args.steps,
        "global_batch": "32 x 64 tokens",
        "cpu_cores": os.cpu_count(),
        "steps_per_second": {
            f"{count}_processes": {
                "median": statistics.median(values),
                "runs": values,
            }
            for count, values in rates.items()
        },
    }
    one = result["steps_per_second"]["1_processes"]["median"]
    two = result["steps_per_second"]["2_processes"]["median"]
    result["two_over_one"] = two / one
    print(f"2 processes / 1 process: {two / one:.2f}x")
    pathlib.Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
