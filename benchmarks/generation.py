"""Generation speed of gMLPCausalLM with and without the decoding cache.

Each backend runs in its own subprocess. The uncached baseline uses the same
keras-hub sampler loop, compiled the same way, but recomputes the causal
forward pass over the whole (padded) sequence for every new token, which is
what a model without a cache has to do.

Each backend runs twice: on an idle machine, and with another process busy
on one core (a Python loop), as on a shared machine or beside a training
job.

    python benchmarks/generation.py                 # all three backends
    python benchmarks/generation.py --quick         # smoke run (CI), idle only
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _flags import FlagParser


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--num-layers", type=int, default=6)
    parser.add_argument("--hidden-dim", type=int, default=256)
    parser.add_argument("--intermediate-dim", type=int, default=1536)
    parser.add_argument(
        "--attention-dim", type=int, default=64, help="tiny attention size; 0 for gMLP"
    )
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--prompt-lengths", default="16,128")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--loads",
        default="idle,busy",
        help="idle, and/or busy: another process spins on one core meanwhile",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny model, one repeat: checks the harness runs",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.num_layers, args.hidden_dim, args.intermediate_dim = 2, 32, 64
        args.attention_dim, args.max_length = 16, 48
        args.prompt_lengths, args.new_tokens, args.repeats = "8,24", 16, 1
        args.loads = "idle"
    return args


def run_worker(args):
    import keras
    import numpy as np
    from keras import ops

    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM

    class UncachedCausalLM(gMLPCausalLM):
        """Same sampler loop; every step re-runs the whole sequence."""

        def generate_step(self, inputs, stop_token_ids=None):
            token_ids, padding_mask = inputs["token_ids"], inputs["padding_mask"]
            index = ops.min(ops.sum(ops.cast(padding_mask, "int32"), axis=-1))

            def next(prompt, cache, index):
                logits = self(
                    {"token_ids": prompt, "padding_mask": ops.ones_like(prompt)}
                )
                hidden = ops.zeros_like(logits[:, 0, :1])
                return ops.take(logits, index - 1, axis=1), hidden, cache

            token_ids = self.sampler(
                next=next,
                prompt=token_ids,
                cache=ops.zeros((1,)),
                index=index,
                mask=padding_mask,
                stop_token_ids=None,
                model=self,
            )
            return {
                "token_ids": token_ids,
                "padding_mask": ops.ones_like(token_ids, "bool"),
            }

    keras.utils.set_random_seed(0)
    backbone = gMLPBackbone(
        vocabulary_size=1000,
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.max_length,
        attention_dim=args.attention_dim or None,
        causal=True,
        dropout=0.0,
    )
    models = {"cached": gMLPCausalLM(backbone), "uncached": UncachedCausalLM(backbone)}
    rng = np.random.default_rng(0)
    for prompt_length in [int(n) for n in args.prompt_lengths.split(",")]:
        length = prompt_length + args.new_tokens
        token_ids = np.zeros((args.batch_size, length), "int32")
        token_ids[:, :prompt_length] = rng.integers(
            5, 1000, (args.batch_size, prompt_length)
        )
        padding_mask = np.arange(length)[None, :] < prompt_length
        inputs = {
            "token_ids": token_ids,
            "padding_mask": np.repeat(padding_mask, args.batch_size, 0),
        }
        outputs = {}
        for name, model in models.items():
            model.compile(sampler="greedy")
            model.generate(inputs, stop_token_ids=None)  # compile and warm up
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                outputs[name] = model.generate(inputs, stop_token_ids=None)
                times.append(time.perf_counter() - start)
            tokens = args.batch_size * args.new_tokens
            print(
                json.dumps(
                    {
                        "backend": keras.backend.backend(),
                        "mode": name,
                        "prompt_length": prompt_length,
                        "tokens_per_second": tokens / statistics.median(times),
                    }
                ),
                flush=True,
            )
        same = np.array_equal(
            keras.ops.convert_to_numpy(outputs["cached"]["token_ids"]),
            keras.ops.convert_to_numpy(outputs["uncached"]["token_ids"]),
        )
        print(
            json.dumps(
                {
                    "backend": keras.backend.backend(),
                    "prompt_length": prompt_length,
                    "same_tokens": bool(same),
                }
            ),
            flush=True,
        )


def run_backend(backend, load, argv):
    """The worker's JSON rows for `backend`, each tagged with `load`;
    None when it failed."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(
        os.environ,
        KERAS_BACKEND=backend,
        PYTHONPATH=os.pathsep.join(
            [os.path.dirname(here), os.environ.get("PYTHONPATH", "")]
        ),
    )
    command = [sys.executable, os.path.abspath(__file__), "--worker", *argv]
    spinner = None
    if load == "busy":
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if result.returncode:
        print(f"{backend} ({load}) failed:\n{result.stderr[-3000:]}")
        return None
    rows = [json.loads(line) for line in result.stdout.splitlines() if line[:1] == "{"]
    return [dict(row, load=load) for row in rows]


def print_table(rows):
    print(
        f"\n{'backend':<11} {'load':<5} {'prompt':>6} {'cached tok/s':>13} "
        f"{'uncached tok/s':>15} {'ratio':>6} {'same tokens':>12}"
    )
    speeds = {
        (r["backend"], r["load"], r["prompt_length"], r["mode"]): r["tokens_per_second"]
        for r in rows
        if "mode" in r
    }
    for r in rows:
        if "same_tokens" in r:
            key = (r["backend"], r["load"], r["prompt_length"])
            cached, uncached = speeds[(*key, "cached")], speeds[(*key, "uncached")]
            print(
                f"{r['backend']:<11} {r['load']:<5} {r['prompt_length']:>6} "
                f"{cached:>13.1f} {uncached:>15.1f} {cached / uncached:>5.1f}x "
                f"{str(r['same_tokens']):>12}"
            )
    for (backend, load, prompt_length, mode), speed in speeds.items():
        reference = speeds.get(("jax", load, prompt_length, mode))
        if mode == "cached" and backend != "jax" and reference:
            print(
                f"prompt {prompt_length}, {load}: {backend} cached = "
                f"{speed / reference:.2f}x JAX"
            )
        idle = speeds.get((backend, "idle", prompt_length, mode))
        if mode == "cached" and load == "busy" and idle:
            print(
                f"prompt {prompt_length}: {backend} cached with a busy core = "
                f"{speed / idle:.2f}x idle"
            )


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        run_worker(args)
        return
    argv = list(argv if argv is not None else sys.argv[1:])
    rows, failed = [], []
    for backend in args.backends.split(","):
        for load in args.loads.split(","):
            backend_rows = run_backend(backend, load, argv)
            if backend_rows is None:
                failed.append(backend)
            else:
                rows += backend_rows
    print_table(rows)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
