"""Time and memory of one block against sequence length: gMLP, aMLP, Transformer.

The spatial gating unit is quadratic in length, as attention is: its
`(length, length)` weights multiply every channel. This measures where that
costs more or less than attention, with one gMLP block, one aMLP block (the
same plus a 64-wide single-head attention) and keras-hub's
`TransformerEncoder`, all of width `--hidden-dim`, at each length.

For every (model, length) a fresh worker process builds the block in a
one-layer Keras model and times `train_on_batch` (forward, backward and a
plain SGD update; median of `--repeats` after a warm-up, XLA-compiled on
TensorFlow and JAX, eager on PyTorch). Peak memory is the worker's peak
resident set (Linux `VmHWM`) minus that of the same worker for the same block
at length 8, so it counts what grows with length: the block's weights and
their gradients, the step's activations and scratch buffers, and the
compiler's work on them, but not the interpreter, the libraries or the
compiler's fixed cost.

    python benchmarks/sequence_length.py --output-dir runs/length
    python benchmarks/sequence_length.py --quick --output-dir /tmp/length

Outputs in --output-dir, each written atomically: sequence_length.json,
sequence_length.md (the table) and sequence_length.png (time and memory
against length, log-log). The table is also printed.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

from _flags import FlagParser

MODELS = ("gmlp", "amlp", "transformer")
# Memory is reported above each block's own peak at this length, which holds
# the interpreter, the libraries and the compiler's fixed cost.
BASELINE_LENGTH = 8
LABELS = {
    "gmlp": "gMLP block",
    "amlp": "aMLP block",
    "transformer": "TransformerEncoder (keras-hub)",
}


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument(
        "--backend",
        choices=["jax", "tensorflow", "torch"],
        default=os.environ.get("KERAS_BACKEND", "jax"),
    )
    parser.add_argument("--lengths", default="128,256,512,1024,2048,4096")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--hidden-dim", type=int, default=256)
    parser.add_argument(
        "--gmlp-intermediate-dim",
        type=int,
        default=1536,
        help="d_ffn of the gMLP and aMLP blocks (gMLP-S: 6 x d)",
    )
    parser.add_argument(
        "--transformer-intermediate-dim",
        type=int,
        default=1024,
        help="the Transformer's feed-forward width (4 x d)",
    )
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--attention-dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny blocks at two short lengths: checks the harness",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.lengths, args.hidden_dim, args.repeats = "16,32", 32, 1
        args.gmlp_intermediate_dim, args.transformer_intermediate_dim = 64, 64
        args.num_heads, args.attention_dim = 2, 8
    try:
        args.length_list = [int(n) for n in args.lengths.split(",")]
    except ValueError:
        parser.error(
            f"--lengths must be comma-separated integers, got {args.lengths!r}"
        )
    args.model_list = args.models.split(",")
    unknown = sorted(set(args.model_list) - set(MODELS))
    if unknown:
        parser.error(f"--models accepts {', '.join(MODELS)}; got {', '.join(unknown)}")
    return args


def resident_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def run_worker(args):
    """Times one (model, length) and prints one JSON line."""
    import time

    model_name, length = args.worker.split(":")
    length = int(length)
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    inputs = keras.Input((length, args.hidden_dim))
    if model_name == "transformer":
        import keras_hub

        block = keras_hub.layers.TransformerEncoder(
            intermediate_dim=args.transformer_intermediate_dim,
            num_heads=args.num_heads,
            dropout=0.0,
        )
    else:
        from keras_gmlp.layers import gMLPBlock

        block = gMLPBlock(
            args.hidden_dim,
            args.gmlp_intermediate_dim,
            length,
            attention_dim=args.attention_dim if model_name == "amlp" else None,
        )
    model = keras.Model(inputs, block(inputs))
    model.compile(
        optimizer=keras.optimizers.SGD(1e-3),
        loss="mse",
        jit_compile=keras.backend.backend() != "torch",
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch_size, length, args.hidden_dim)).astype(
        "float32"
    )
    y = rng.standard_normal(x.shape).astype("float32")
    model.train_on_batch(x, y)  # compiles
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "model": model_name,
                "length": length,
                "parameters": model.count_params(),
                "seconds": statistics.median(times),
                "process_peak_mib": resident_kib("VmHWM") / 1024,
            }
        ),
        flush=True,
    )


def run_in_worker(args, model_name, length):
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--output-dir",
        args.output_dir,
        "--worker",
        f"{model_name}:{length}",
    ] + forwarded_flags(args)
    env = dict(os.environ, KERAS_BACKEND=args.backend)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(
            f"{model_name} at length {length} failed:\n{done.stderr[-3000:]}"
        )
    return json.loads(lines[-1])


def measure(args):
    baselines = {
        model_name: run_in_worker(args, model_name, BASELINE_LENGTH)["process_peak_mib"]
        for model_name in args.model_list
    }
    results = []
    for length in args.length_list:
        for model_name in args.model_list:
            row = run_in_worker(args, model_name, length)
            row["peak_mib"] = row["process_peak_mib"] - baselines[model_name]
            print(
                f"{LABELS[model_name]:<31} length {length:>5}: "
                f"{row['seconds'] * 1000:9.1f} ms, {row['peak_mib']:8.1f} MiB",
                flush=True,
            )
            results.append(row)
    return results


def forwarded_flags(args):
    flags = [
        "--batch-size",
        args.batch_size,
        "--hidden-dim",
        args.hidden_dim,
        "--gmlp-intermediate-dim",
        args.gmlp_intermediate_dim,
        "--transformer-intermediate-dim",
        args.transformer_intermediate_dim,
        "--num-heads",
        args.num_heads,
        "--attention-dim",
        args.attention_dim,
        "--repeats",
        args.repeats,
    ]
    return [str(flag) for flag in flags]


def table(results, args):
    rows = {(r["model"], r["length"]): r for r in results}
    lines = [
        "| length | "
        + " | ".join(f"{LABELS[m]} ms | {LABELS[m]} MiB" for m in args.model_list)
        + " |",
        "|---" * (1 + 2 * len(args.model_list)) + "|",
    ]
    for length in args.length_list:
        cells = []
        for model_name in args.model_list:
            row = rows[(model_name, length)]
            cells += [f"{row['seconds'] * 1000:.1f}", f"{row['peak_mib']:.0f}"]
        lines.append(f"| {length} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    for model_name in args.model_list:
        rows = sorted(
            (r for r in results if r["model"] == model_name), key=lambda r: r["length"]
        )
        lengths = [r["length"] for r in rows]
        time_axis.plot(
            lengths, [r["seconds"] * 1000 for r in rows], "o-", label=LABELS[model_name]
        )
        memory_axis.plot(
            lengths, [r["peak_mib"] for r in rows], "o-", label=LABELS[model_name]
        )
    for axis, label in (
        (time_axis, "forward + backward + update, ms"),
        (memory_axis, "peak memory, MiB"),
    ):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("sequence length")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    time_axis.legend()
    figure.suptitle(
        f"One block, width {args.hidden_dim}, batch {args.batch_size}, "
        f"{args.backend} backend, float32"
    )
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png")
    plt.close(figure)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        run_worker(args)
        return
    output_dir = pathlib.Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    results = measure(args)
    markdown = table(results, args)
    print("\n" + markdown)
    summary = {
        "command": sys.argv,
        "backend": args.backend,
        "config": {
            k: v
            for k, v in vars(args).items()
            if k not in ("worker", "length_list", "model_list")
        },
        "results": results,
    }
    write_text(output_dir / "sequence_length.json", json.dumps(summary, indent=1))
    write_text(output_dir / "sequence_length.md", markdown)
    plot(results, args, output_dir / "sequence_length.png")
    print(f"outputs in {output_dir}")


if __name__ == "__main__":
    # A sibling module: run as a script, this folder is first on sys.path.
    from mlm_vs_transformer import atomic_path
    from mlm_vs_transformer import write_text

    try:
        main()
    except KeyboardInterrupt:
        print("interrupted; nothing was written")
        sys.exit(130)
