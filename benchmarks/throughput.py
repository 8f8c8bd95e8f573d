"""Throughput of keras-gmlp's models on each Keras backend, against timm and BERT.

Images: gMLP-Ti/S/B and Mixer-B/16 at 224x224, inference and training (forward,
backward, AdamW update) images per second, float32 and mixed bfloat16, compiled
with XLA on TensorFlow and JAX (PyTorch runs eagerly; `--torch-compile` adds
PyTorch with `jit_compile=True`). When timm imports (in this
interpreter or in `--timm-python`), timm's model of the same name runs in the
same session, eagerly and with `torch.compile`, and the table shows ours / timm
and the fraction of the machine's matmul roofline (model FLOPs x throughput /
the best large-matmul GFLOP/s any worker measured).

Text: `keras_gmlp.models.gMLPBackbone` shaped as gMLP-base and aMLP-base,
tokens per second (inference) at lengths 128 and 512, against keras-hub's
`BertBackbone` as BERT-base on the same backend.

Each backend (and timm) runs in its own worker process, all alive at once: the
timed steps are interleaved round-robin across them, so load from other
processes on a shared machine hits every contender alike. The table reports
the median of `--repeats` timed steps after `--warmup` untimed ones.

    python benchmarks/throughput.py --models gmlp_s16 --batch-sizes 8 \\
        --precisions float32 --timm-python /opt/timm-venv/bin/python
    python benchmarks/throughput.py --quick   # smoke run, about a minute

`--keep-freed-memory` runs every worker with glibc keeping freed memory
mapped, what `keras_gmlp.host_memory.keep_freed_host_memory()` does in-process: XLA's
CPU runtime otherwise pays a page fault per 4 KiB of its scratch buffer on
every training step.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _flags import FlagParser

BACKENDS = ("tensorflow", "jax", "torch")
PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16"}
# The environment form of keras_gmlp.host_memory.keep_freed_host_memory(); the timm
# worker runs in an interpreter that may not have keras_gmlp.
KEEP_FREED_MEMORY = dict(
    MALLOC_ARENA_MAX="1", MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_=str(2**36)
)
RESPONSE = "@@"  # Prefix of a worker's answers; anything else on stdout is noise.

# Image models: the paper's sizes, as timm's models of the same name.
IMAGE_MODELS = {
    "gmlp_ti16": dict(kind="gmlp", num_blocks=30, hidden_dim=128, mlp_dim=768),
    "gmlp_s16": dict(kind="gmlp", num_blocks=30, hidden_dim=256, mlp_dim=1536),
    "gmlp_b16": dict(kind="gmlp", num_blocks=30, hidden_dim=512, mlp_dim=3072),
    "mixer_b16": dict(
        kind="mixer", num_blocks=12, hidden_dim=768, mlp_dim=3072, tokens_mlp_dim=384
    ),
}
# Text encoders (BERT-base setup): keras_gmlp.models.gMLPBackbone against
# keras_hub.models.BertBackbone.
TEXT_MODELS = {
    "gmlp_base": dict(kind="gmlp", num_blocks=48, hidden_dim=512, mlp_dim=3072),
    "amlp_base": dict(
        kind="gmlp", num_blocks=36, hidden_dim=512, mlp_dim=3072, attention_dim=64
    ),
    "bert_base": dict(
        kind="bert", num_blocks=12, hidden_dim=768, mlp_dim=3072, heads=12
    ),
}
VOCABULARY_SIZE = 30522


def quick_size(config):
    """The same architecture with two blocks, for the smoke run."""
    return dict(config, num_blocks=2)


# ----------------------------------------------------------------------------
# FLOPs (a multiply-add counts 2; training counts 3x the forward pass).


def image_flops(config, image_size, classes=1000, patch=16):
    tokens = (image_size // patch) ** 2
    d, f = config["hidden_dim"], config["mlp_dim"]
    if config["kind"] == "gmlp":
        block = 2 * tokens * (d * f + tokens * f // 2 + f // 2 * d)
    else:
        t = config["tokens_mlp_dim"]
        block = 2 * d * 2 * tokens * t + 2 * tokens * 2 * d * f
    stem = 2 * tokens * patch * patch * 3 * d
    return stem + config["num_blocks"] * block + 2 * d * classes


def text_flops_per_token(config, length):
    d, f = config["hidden_dim"], config["mlp_dim"]
    if config["kind"] == "bert":
        block = 8 * d * d + 4 * d * f + 4 * length * d
    else:
        block = 2 * (d * f + length * f // 2 + f // 2 * d)
        a = config.get("attention_dim")
        if a:
            block += 2 * (3 * d * a + 2 * length * a + a * f // 2)
    return config["num_blocks"] * block


# ----------------------------------------------------------------------------
# Workers: one process per backend (or timm), answering JSON commands on stdin.


def reply(**message):
    print(RESPONSE + json.dumps(message), flush=True)


def peak_gflops(matmul, size, repeats=5):
    """Best GFLOP/s of a `size`^3 float32 matmul; `matmul()` must block."""
    matmul()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        matmul()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / min(times) / 1e9


def keras_image_model(config, image_size, **overrides):
    """The builders' gMLP or MLP-Mixer shaped as an `IMAGE_MODELS` row (or
    the GPU check's `--quick` row), with logits out."""
    from keras_gmlp.applications.gmlp import gMLP
    from keras_gmlp.applications.mlp_mixer import MLPMixer

    common = dict(
        num_blocks=config["num_blocks"],
        hidden_dim=config["hidden_dim"],
        input_shape=(image_size, image_size, 3),
        classifier_activation=None,
    )
    common.update(overrides)
    if config["kind"] == "gmlp":
        return gMLP(intermediate_dim=config["mlp_dim"], **common)
    return MLPMixer(
        tokens_mlp_dim=config["tokens_mlp_dim"],
        channels_mlp_dim=config["mlp_dim"],
        **common,
    )


class KerasWorker:
    def __init__(self, compiled=False):
        import keras
        import numpy as np

        self.keras, self.np = keras, np
        self.backend = keras.backend.backend()
        # XLA on TensorFlow and JAX always; `torch.compile` on PyTorch only
        # for the `--torch-compile` worker.
        self.jit_compile = self.backend != "torch" or compiled

    def peak(self, size):
        ops = self.keras.ops
        a = ops.ones((size, size), "float32")
        return peak_gflops(lambda: ops.convert_to_numpy(ops.matmul(a, a)[0, 0]), size)

    def prepare(self, spec):
        keras, np = self.keras, self.np
        keras.config.set_dtype_policy(PRECISIONS[spec["precision"]])
        keras.utils.set_random_seed(0)
        batch = spec["batch_size"]
        if spec["task"] == "image":
            model = keras_image_model(spec["config"], spec["image_size"])
            size = spec["image_size"]
            x = np.random.uniform(0, 255, (batch, size, size, 3)).astype("float32")
            y = np.random.randint(0, 1000, (batch,))
        else:
            model = self._text_model(spec)
            tokens = np.random.randint(1, VOCABULARY_SIZE, (batch, spec["length"]))
            x = {
                "token_ids": tokens,
                "segment_ids": np.zeros_like(tokens),
                "padding_mask": np.ones_like(tokens, bool),
            }
        jit_compile = self.jit_compile
        if spec["mode"] == "infer":
            model.compile(jit_compile=jit_compile)
            return lambda: model.predict_on_batch(x)
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-4),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit_compile,
        )
        return lambda: model.train_on_batch(x, y)

    def _text_model(self, spec):
        config, length = spec["config"], spec["length"]
        if config["kind"] == "bert":
            import keras_hub

            return keras_hub.models.BertBackbone(
                vocabulary_size=VOCABULARY_SIZE,
                num_layers=config["num_blocks"],
                num_heads=config["heads"],
                hidden_dim=config["hidden_dim"],
                intermediate_dim=config["mlp_dim"],
                max_sequence_length=length,
            )
        from keras_gmlp.models import gMLPBackbone

        # The shipped backbone, as users build it (its pooled output too).
        return gMLPBackbone(
            vocabulary_size=VOCABULARY_SIZE,
            num_layers=config["num_blocks"],
            hidden_dim=config["hidden_dim"],
            intermediate_dim=config["mlp_dim"],
            max_sequence_length=length,
            attention_dim=config.get("attention_dim"),
        )


class TimmWorker:
    def __init__(self, compiled):
        import timm
        import torch

        self.timm, self.torch, self.compiled = timm, torch, compiled

    def peak(self, size):
        torch = self.torch
        a = torch.ones(size, size)
        return peak_gflops(lambda: torch.mm(a, a), size)

    def prepare(self, spec):
        torch = self.torch
        if spec["task"] != "image":
            return None
        torch.manual_seed(0)
        config, size, batch = spec["config"], spec["image_size"], spec["batch_size"]
        model = self.timm.create_model(spec["timm_name"], img_size=size)
        # The quick run's two-block models: timm's registry fixes the depth.
        model.blocks = model.blocks[: config["num_blocks"]]
        x = torch.randn(batch, 3, size, size)
        y = torch.randint(0, 1000, (batch,))
        return torch_image_step(
            torch, model, x, y, spec["mode"], spec["precision"], self.compiled
        )


def torch_image_step(torch, model, x, y, mode, precision, compiled):
    """One training step (forward, backward, AdamW) or one inference forward
    of a PyTorch image classifier on `x` (labels `y`), under bfloat16
    autocast for `precision="bfloat16"` and `torch.compile` if `compiled`.
    Also benchmarks/_accelerator/peers.py's step for timm on a GPU."""
    autocast = torch.autocast(
        x.device.type, torch.bfloat16, enabled=precision == "bfloat16"
    )
    forward = torch.compile(model) if compiled else model
    if mode == "infer":
        model.eval()

        def step():
            with torch.inference_mode(), autocast:
                forward(x)

        return step
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = torch.nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()

    return step


def run_worker(kind):
    if kind.startswith("keras"):
        worker = KerasWorker(compiled=kind == "keras-compile")
    else:
        worker = TimmWorker(compiled=kind == "timm-compile")
    steps = {}
    reply(ready=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["cmd"] == "peak":
                reply(gflops=worker.peak(command["size"]))
            elif command["cmd"] == "prepare":
                spec = command["spec"]
                step = worker.prepare(spec)
                if step is None:
                    reply(skipped=True)
                    continue
                for _ in range(spec["warmup"]):
                    step()
                steps[command["key"]] = step
                reply(ok=True)
            elif command["cmd"] == "time":
                start = time.perf_counter()
                steps[command["key"]]()
                reply(seconds=time.perf_counter() - start)
            elif command["cmd"] == "release":
                steps.clear()
                import gc

                gc.collect()
                reply(ok=True)
        except Exception as error:  # Reported in the table, the run goes on.
            reply(error=f"{type(error).__name__}: {error}"[:300])


# ----------------------------------------------------------------------------
# The driver.


class Worker:
    def __init__(self, name, python, kind, env):
        self.name = name
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if not env.get("BENCH_DEBUG") else None,
            text=True,
            env=env,
        )
        self.alive = self.receive().get("ready", False)

    def receive(self):
        for line in self.process.stdout:
            if line.startswith(RESPONSE):
                return json.loads(line[len(RESPONSE) :])
        self.alive = False
        return {"error": "worker exited"}

    def ask(self, **command):
        if not self.alive:
            return {"error": "worker not running"}
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.receive()

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


def timm_available(python):
    probe = subprocess.run(
        [python, "-c", "import timm"], capture_output=True, text=True
    )
    return probe.returncode == 0


def start_workers(args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if args.keep_freed_memory:
        env.update(KEEP_FREED_MEMORY)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(
        [root] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    workers = []
    for backend in args.backends:
        workers.append(
            Worker(
                f"keras-{backend}",
                sys.executable,
                "keras",
                dict(env, KERAS_BACKEND=backend),
            )
        )
    if args.torch_compile and "torch" in args.backends:
        workers.append(
            Worker(
                "keras-torch-compile",
                sys.executable,
                "keras-compile",
                dict(env, KERAS_BACKEND="torch"),
            )
        )
    timm_python = args.timm_python or sys.executable
    if not args.no_timm and "image" in args.tasks and timm_available(timm_python):
        workers.append(Worker("timm", timm_python, "timm", env))
        if args.torch_compile:
            workers.append(Worker("timm-compile", timm_python, "timm-compile", env))
    elif "image" in args.tasks:
        print(f"timm is not importable by {timm_python}: the timm peer is skipped.")
    return workers


def time_group(workers, jobs, warmup, repeats):
    """Prepares every (worker, spec) job, then times them round-robin."""
    results = {}
    ready = []
    for index, (worker, spec) in enumerate(jobs):
        key = str(index)
        answer = worker.ask(cmd="prepare", key=key, spec=dict(spec, warmup=warmup))
        if answer.get("ok"):
            ready.append((index, worker, key))
            results[index] = []
        elif "error" in answer:
            results[index] = answer["error"]
    for _ in range(repeats):
        for index, worker, key in ready:
            answer = worker.ask(cmd="time", key=key)
            if "seconds" in answer:
                results[index].append(answer["seconds"])
            else:
                results[index] = answer.get("error", "failed")
                ready = [r for r in ready if r[0] != index]
    for worker in {worker for worker, _ in jobs}:
        worker.ask(cmd="release")
    return results


def format_table(rows, columns):
    widths = [
        max(len(str(row[c])) for row in rows + [dict(zip(columns, columns))])
        for c in columns
    ]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths)))
    return "\n".join(lines)


def summarize(samples, items):
    if isinstance(samples, str) or not samples:
        return None, (samples or "no samples") if isinstance(samples, str) else "-"
    return items / statistics.median(samples), None


def add_row(rows, row, speed, error, reference, flops, peak, digits):
    """Completes `row` with throughput, ratio to `reference` and roofline."""
    if speed is None:
        row.update(throughput=error, ratio="-", roofline="-")
    else:
        row.update(
            throughput=f"{speed:.{digits}f}",
            ratio=f"{speed / reference:.2f}x" if reference else "-",
            roofline=f"{100 * flops * speed / 1e9 / peak:.1f}%",
        )
    rows.append(row)
    print(format_table([row], list(row)).splitlines()[-1], flush=True)


def run_images(args, workers, peak, rows):
    keras_workers = [w for w in workers if w.name.startswith("keras")]
    for model in args.models:
        config = IMAGE_MODELS[model]
        if args.quick:
            config = quick_size(config)
        for precision in args.precisions:
            for batch in args.batch_sizes:
                for mode in args.modes:
                    spec = dict(
                        task="image",
                        model=model,
                        config=config,
                        timm_name=f"{model}_224",
                        image_size=args.image_size,
                        batch_size=batch,
                        precision=precision,
                        mode=mode,
                    )
                    jobs = [(w, spec) for w in workers]
                    results = time_group(workers, jobs, args.warmup, args.repeats)
                    flops = image_flops(config, args.image_size)
                    flops *= 3 if mode == "train" else 1
                    speeds = {}
                    for index, (worker, _) in enumerate(jobs):
                        speed, error = summarize(results.get(index, "skipped"), batch)
                        speeds[worker.name] = speed
                        speeds[worker.name + "!"] = error
                    for worker in workers:
                        add_row(
                            rows,
                            dict(
                                task="image",
                                model=model,
                                batch=batch,
                                precision=precision,
                                mode=mode,
                                impl=worker.name,
                                unit="img/s",
                            ),
                            speeds[worker.name],
                            speeds[worker.name + "!"],
                            speeds.get("timm"),
                            flops,
                            peak,
                            digits=2,
                        )
    return keras_workers


def run_text(args, workers, peak, rows):
    keras_workers = [w for w in workers if w.name.startswith("keras")]
    for precision in args.precisions:
        for length in args.lengths:
            jobs = []
            for worker in keras_workers:
                for model, config in TEXT_MODELS.items():
                    config = quick_size(config) if args.quick else config
                    jobs.append(
                        (
                            worker,
                            dict(
                                task="text",
                                model=model,
                                config=config,
                                length=length,
                                batch_size=args.text_batch_size,
                                precision=precision,
                                mode="infer",
                            ),
                        )
                    )
            results = time_group(workers, jobs, args.warmup, args.repeats)
            speeds = {}
            for index, (worker, spec) in enumerate(jobs):
                tokens = args.text_batch_size * length
                speeds[(worker.name, spec["model"])] = summarize(
                    results.get(index, "skipped"), tokens
                )
            for worker, spec in jobs:
                speed, error = speeds[(worker.name, spec["model"])]
                bert = speeds[(worker.name, "bert_base")][0]
                flops = text_flops_per_token(spec["config"], length)
                add_row(
                    rows,
                    dict(
                        task="text",
                        model=spec["model"],
                        batch=args.text_batch_size,
                        precision=precision,
                        mode=f"infer-L{length}",
                        impl=worker.name,
                        unit="tok/s",
                    ),
                    speed,
                    error,
                    bert,
                    flops,
                    peak,
                    digits=0,
                )


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--worker",
        choices=["keras", "keras-compile", "timm", "timm-compile"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: two-block models at 64x64, batch 2, "
        "length 32, one warm-up and one timed step",
    )
    parser.add_argument(
        "--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS
    )
    parser.add_argument(
        "--tasks", nargs="+", default=["image", "text"], choices=["image", "text"]
    )
    parser.add_argument(
        "--models", nargs="+", default=list(IMAGE_MODELS), choices=list(IMAGE_MODELS)
    )
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[8, 32])
    parser.add_argument(
        "--precisions",
        nargs="+",
        default=["float32", "bfloat16"],
        choices=list(PRECISIONS),
    )
    parser.add_argument(
        "--modes", nargs="+", default=["infer", "train"], choices=["infer", "train"]
    )
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--lengths", nargs="+", type=int, default=[128, 512])
    parser.add_argument("--text-batch-size", type=int, default=4)
    parser.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="untimed steps per configuration (the first compiles)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed steps per configuration; the table shows the median",
    )
    parser.add_argument(
        "--timm-python",
        default=None,
        help="interpreter that has timm (default: this one)",
    )
    parser.add_argument("--no-timm", action="store_true")
    parser.add_argument(
        "--torch-compile",
        action="store_true",
        help="also time ours on PyTorch with jit_compile=True and timm "
        "under torch.compile (slow to compile)",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="run every worker, timm included, with glibc set to keep freed "
        "memory mapped (the environment form of "
        "keras_gmlp.host_memory.keep_freed_host_memory())",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.models = ["gmlp_s16", "mixer_b16"]
        args.image_size, args.batch_sizes, args.lengths = 64, [2], [32]
        args.precisions, args.text_batch_size = ["float32"], 2
        args.warmup, args.repeats = 1, 1
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        run_worker(args.worker)
        return 0
    workers = start_workers(args)
    try:
        size = 512 if args.quick else 2048
        peaks = [w.ask(cmd="peak", size=size).get("gflops", 0) for w in workers]
        peak = max(peaks)
        print(
            f"matmul peak (GFLOP/s, float32 {size}^3): "
            + ", ".join(f"{w.name} {p:.0f}" for w, p in zip(workers, peaks)),
            flush=True,
        )
        rows = []
        if "image" in args.tasks:
            run_images(args, workers, peak, rows)
        if "text" in args.tasks:
            run_text(args, workers, peak, rows)
    finally:
        for worker in workers:
            worker.close()
    print()
    print(
        f"Median of {args.repeats} timed steps after {args.warmup} warm-up; "
        "ratio: images vs timm eager, text vs BERT-base on the same backend; "
        f"roofline: model FLOPs x throughput / {peak:.0f} GFLOP/s"
        + (
            "; every worker kept freed memory (--keep-freed-memory)."
            if args.keep_freed_memory
            else "."
        )
    )
    print(format_table(rows, list(rows[0])) if rows else "no results")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(dict(peak_gflops=peak, rows=rows), file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
