"""Serving: float32, int8, int4 and GPTQ; LoRA on float and int8 weights.

1. Quantization, on each backend, the programs as users run them:
   - causal LM: `train_causal_lm.py --quantize MODE` (the default causal
     gMLP) for int8, int4 and gptq (4-bit, calibrated on 128 train
     windows): test perplexity of float32 and MODE; then a worker loads
     its final preset, quantizes it as the program does, and reports the
     `.keras` file of each and the weights' bytes in memory, and greedy
     generation tokens/s at batch 1 and 4 (16-token prompts, 48 new
     tokens, median of --repeats, float and quantized interleaved);
   - images: `train_image_classifier.py --quantize MODE` (the default
     digits gMLP) for int8 and int4 (GPTQ is for language models in
     Keras 3.15.1: its calibration cuts token windows, not images): test
     accuracy of both, best.keras (saved again without AdamW's state)
     against best_<mode>.keras in bytes, and `predict_on_batch` latency at
     batch 1 and 32 (median of 20 calls after 3 warm-ups).
2. LoRA on one backend (--lora-backend), --seeds seeds each, rank 4:
   - text: finetune_text_classifier.py's offline task (which stdlib package
     a docstring paragraph is from), from pretrain_mlm.py's default preset;
   - images: the digits, train_image_classifier.py from a timm-layout
     checkpoint (safetensors, `timm_state_dict`) of the default gMLP that
     the same program trained on the digits (seed 100) with its head
     removed. The checkpoint has seen the digits (there is no other image
     set offline): this measures how the methods re-learn a head and
     adapt, not transfer.
   --lora-methods: full (every weight trains), lora (the program's
   learning rate), lora_10x_lr, and lora_int8_10x_lr (`--quantize-base
   int8`: the frozen weights int8, QLoRA's recipe). Reported: trainable
   parameters, AdamW's state for them (2 slots x 4 bytes), the run's peak
   RSS (`os.wait4`), and test accuracy (median and range).

    python benchmarks/lora_and_quantization.py             # about 45 min
    python benchmarks/lora_and_quantization.py --repeats 3 --seeds 2  # 34 min
    python benchmarks/lora_and_quantization.py --parts quantization --backends jax
    python benchmarks/lora_and_quantization.py --fast --backends jax  # 6 min

Writes benchmarks/lora_and_quantization.json (or --output); a rerun skips
the runs already in it, and prints the tables of what the JSON holds.
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
# What each program's --quantize accepts of the benchmark's modes.
PROGRAMS = {
    "image": ("train_image_classifier", "test_accuracy", ("int8", "int4")),
    "causal_lm": ("train_causal_lm", "heldout_perplexity", ("int8", "int4", "gptq")),
}
PROMPT_LENGTH, NEW_TOKENS = 16, 48


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="quantization,lora")
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--modes", default="int8,int4,gptq")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lora-backend", default="jax")
    parser.add_argument("--lora-rank", type=int, default=4)
    parser.add_argument("--lora-methods", default="lora_10x_lr,lora_int8_10x_lr")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--fast",
        action="store_true",
        help="the programs' --fast (tiny data and models), 1 seed, 2 repeats",
    )
    parser.add_argument(
        "--work-dir", default=str(pathlib.Path(tempfile.gettempdir()) / "lora_quant")
    )
    parser.add_argument(
        "--output",
        help="the JSON (default: benchmarks/lora_and_quantization.json; with "
        "--fast, lora_and_quantization.json in --work-dir)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fast:
        args.seeds, args.repeats = 1, 2
        args.work_dir = str(pathlib.Path(args.work_dir) / "fast")
    if args.output is None:
        folder = pathlib.Path(args.work_dir) if args.fast else ROOT / "benchmarks"
        args.output = str(folder / "lora_and_quantization.json")
    return args


def run_program(name, flags, backend, fast=False):
    """Runs applications/<name>.py; returns (its summary, peak RSS in MB)."""
    output_dir = pathlib.Path(flags[flags.index("--output-dir") + 1])
    env = dict(os.environ, KERAS_BACKEND=backend)
    script = str(ROOT / "applications" / f"{name}.py")
    command = [sys.executable, script, *flags, *(["--fast"] if fast else [])]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{name} {' '.join(flags)} failed:\n{stderr[-3000:]}")
    summary = json.loads((output_dir / "summary.json").read_text())
    return summary, usage.ru_maxrss / 1024


def lora_methods(rate, rank):
    """{method: the flags it adds}; `rate` is the program's learning rate
    (LoRA's factors start at zero and want a larger step)."""
    lora = ["--lora-rank", str(rank)]
    faster = ["--learning-rate", str(10 * rate)]
    return {
        "full": [],
        "lora": lora,
        "lora_10x_lr": [*lora, *faster],
        "lora_int8_10x_lr": [*lora, *faster, "--quantize-base", "int8"],
    }


def lora_runs(args, work, results):
    """Part 2: one entry per (task, method, seed)."""
    backend = args.lora_backend
    preset = work / "pretrain" / "final_preset"
    if not (preset / "config.json").is_file():
        flags = ["--output-dir", str(work / "pretrain")]
        run_program("pretrain_mlm", flags, backend, args.fast)
    checkpoint = image_checkpoint(work, backend, args.fast)
    # (program, flags, score, the program's default learning rate)
    tasks = {
        "text": (
            "finetune_text_classifier",
            ["--preset", str(preset)],
            "accuracy",
            5e-4,
        ),
        "digits": (
            "train_image_classifier",
            ["--weights", str(checkpoint)],
            "test_accuracy",
            2e-3,
        ),
    }
    for task, (program, flags, score, rate) in tasks.items():
        methods = lora_methods(rate, args.lora_rank)
        for method in args.lora_methods.split(","):
            for seed in range(args.seeds):
                key = f"lora/{task}/{method}/{seed}"
                if key in results:
                    continue
                output_dir = work / key.replace("/", "-")
                run_flags = [*flags, *methods[method], "--seed", str(seed)]
                run_flags += ["--output-dir", str(output_dir)]
                summary, peak = run_program(program, run_flags, backend, args.fast)
                results[key] = {
                    "accuracy": summary[score],
                    "parameters": summary.get("parameters"),
                    "trainable_parameters": summary["trainable_parameters"],
                    "peak_rss_mb": peak,
                    "seconds": summary["seconds"],
                }
                save(args, results)


def image_checkpoint(work, backend, fast):
    """A timm-layout safetensors of the default digits gMLP, head removed."""
    path = work / "digits_gmlp_headless.safetensors"
    if path.is_file():
        return path
    source = work / "digits-source"
    flags = ["--seed", "100", "--output-dir", str(source)]
    run_program("train_image_classifier", flags, backend, fast)
    code = (
        "import keras, numpy as np, safetensors.numpy as st, sys\n"
        "from keras_gmlp.applications import timm_state_dict\n"
        "model = keras.saving.load_model(sys.argv[1], compile=False)\n"
        "state = {k: np.ascontiguousarray(v) for k, v in timm_state_dict(model).items()"
        " if not k.startswith('head.')}\n"
        "st.save_file(state, sys.argv[2])\n"
    )
    env = dict(os.environ, KERAS_BACKEND=backend)
    subprocess.run(
        [sys.executable, "-c", code, str(source / "best.keras"), str(path)],
        env=env,
        check=True,
    )
    return path


def quantization_runs(args, work, results):
    """Part 1: one entry per (model, backend, mode)."""
    for backend in args.backends.split(","):
        for mode in args.modes.split(","):
            for model, (program, score, modes) in PROGRAMS.items():
                key = f"quantization/{model}/{backend}/{mode}"
                if key in results or mode not in modes:
                    continue
                output_dir = work / key.replace("/", "-")
                flags = ["--quantize", mode, "--output-dir", str(output_dir)]
                if model == "causal_lm":
                    flags += ["--samplers", "greedy"]
                summary, _ = run_program(program, flags, backend, args.fast)
                worker = f"{model}:{output_dir}:{mode}:{args.repeats}"
                results[key] = {
                    "float32": summary[score],
                    mode: summary[f"{score}_{mode}"],
                    **run_worker(backend, worker),
                }
                save(args, results)


def run_worker(backend, worker):
    env = dict(os.environ, KERAS_BACKEND=backend)
    command = [sys.executable, __file__, "--worker", worker]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(
            f"worker {worker} on {backend} failed:\n{result.stderr[-3000:]}"
        )
    return json.loads(result.stdout.strip().splitlines()[-1])


def median_seconds(function, repeats, warmups):
    for _ in range(warmups):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def image_worker(output_dir, mode, repeats):
    """Sizes and batch-1/32 latency of best.keras and best_<mode>.keras."""
    import keras
    import numpy as np

    import keras_gmlp  # noqa: F401 (registers the layers with Keras)

    facts = {}
    for name, file in (("float32", "best.keras"), (mode, f"best_{mode}.keras")):
        path = output_dir / file
        model = keras.saving.load_model(path, compile=False)
        if name == "float32":
            # Saved again uncompiled: best.keras also holds AdamW's state;
            # best_<mode>.keras has none. (A reloaded int8 model cannot be
            # saved again in Keras 3.15, keras-hub's included.)
            path = output_dir / "best_uncompiled.keras"
            model.save(path)
        facts[f"{name}_bytes"] = path.stat().st_size
        for batch in (1, 32):
            images = np.random.default_rng(0).random(
                (batch, *model.input_shape[1:]), "float32"
            )
            seconds = median_seconds(
                lambda m=model, x=images: m.predict_on_batch(x), 4 * repeats, 3
            )
            facts[f"{name}_batch{batch}_ms"] = 1000 * seconds
    return facts


def causal_lm_worker(output_dir, mode, repeats):
    """Sizes and greedy generation speed of the float LM and its copy
    quantized as the program quantizes it (`_shared.serving`; GPTQ
    calibrated on the bundled corpus' first windows, the preset's own
    train windows not being at hand)."""
    import types

    sys.path.insert(0, str(ROOT / "applications"))
    from _causal_lm.data import bundled_calibration
    from _shared.serving import quantized_copy

    from keras_gmlp.models import gMLPCausalLM

    causal_lm = gMLPCausalLM.from_preset(str(output_dir / "final_preset"))
    calibration = bundled_calibration(
        types.SimpleNamespace(quantize=mode, corpus="reference"),
        causal_lm.preprocessor.tokenizer,
        causal_lm.backbone.max_sequence_length,
    )
    models = {
        "float32": causal_lm,
        mode: quantized_copy(causal_lm, mode, calibration),
    }
    facts = {}
    for name, model in models.items():
        model.preprocessor = None  # token ids in; no vocabulary in the file
        facts.update(model_bytes(model, output_dir / f"lm_{name}.keras", name))
        model.compile(sampler="greedy")
    # 48 new tokens; fewer in a --fast model's shorter window.
    length = min(PROMPT_LENGTH + NEW_TOKENS, causal_lm.backbone.max_sequence_length)
    return {**facts, **generation_speed(models, repeats, length)}


def model_bytes(model, path, name):
    """{name_bytes: the `.keras` file's size, name_weight_bytes: the
    weights' bytes in memory}."""
    import keras

    model.save(path)
    in_memory = sum(keras.ops.convert_to_numpy(w).nbytes for w in model.weights)
    return {f"{name}_bytes": path.stat().st_size, f"{name}_weight_bytes": in_memory}


def generation_speed(models, repeats, length):
    """Greedy tokens/s of each model at batch 1 and 4: `length` tokens
    from PROMPT_LENGTH-token prompts, the median of `repeats` generations,
    the models interleaved so that load from other processes hits them
    alike."""
    import numpy as np

    prompts = np.random.default_rng(0).integers(5, 500, (4, length)).astype("int32")
    mask = np.arange(length)[None, :] < PROMPT_LENGTH
    facts = {"new_tokens": length - PROMPT_LENGTH}
    for batch in (1, 4):
        inputs = {
            "token_ids": np.where(mask, prompts, 0)[:batch],
            "padding_mask": mask.repeat(batch, 0),
        }
        times = {name: [] for name in models}
        for model in models.values():
            model.generate(inputs, stop_token_ids=None)  # warm-up
        for _ in range(repeats):
            for name, model in models.items():
                start = time.perf_counter()
                model.generate(inputs, stop_token_ids=None)
                times[name].append(time.perf_counter() - start)
        for name, seconds in times.items():
            tokens = batch * (length - PROMPT_LENGTH)
            tokens_per_second = tokens / statistics.median(seconds)
            facts[f"{name}_batch{batch}_tokens_per_second"] = tokens_per_second
    return facts


def ratio(value, reference):
    return f"{value / reference:.2f}x"


def quantization_tables(results):
    """Markdown tables of part 1: the causal LM's, then the images'."""
    lm = [
        "| backend | mode | test perplexity float32 / mode | .keras bytes float32 / "
        "mode | weights in memory | greedy tokens/s batch 1, float32 / mode | "
        "batch 4, float32 / mode |",
        "|---|---|---|---|---|---|---|",
    ]
    image = [
        "| backend | mode | test accuracy float32 / mode | .keras bytes float32 / "
        "mode | batch 1 ms float32 / mode | batch 32 ms float32 / mode |",
        "|---|---|---|---|---|---|",
    ]
    for key, r in results.items():
        _, model, backend, mode = key.split("/")
        if model == "causal_lm":
            speeds = [
                f"{r[f'float32_batch{b}_tokens_per_second']:.0f} / "
                f"{r[f'{mode}_batch{b}_tokens_per_second']:.0f} ("
                + ratio(
                    r[f"{mode}_batch{b}_tokens_per_second"],
                    r[f"float32_batch{b}_tokens_per_second"],
                )
                + ")"
                for b in (1, 4)
            ]
            lm.append(
                f"| {backend} | {mode} | {r['float32']:.3f} / {r[mode]:.3f} "
                f"({100 * (r[mode] / r['float32'] - 1):+.2f}%) | "
                f"{r['float32_bytes']:,} / {r[f'{mode}_bytes']:,} "
                f"({ratio(r[f'{mode}_bytes'], r['float32_bytes'])}) | "
                f"{ratio(r[f'{mode}_weight_bytes'], r['float32_weight_bytes'])} | "
                f"{speeds[0]} | {speeds[1]} |"
            )
        else:
            image.append(
                f"| {backend} | {mode} | {r['float32']:.4f} / {r[mode]:.4f} | "
                f"{r['float32_bytes']:,} / {r[f'{mode}_bytes']:,} "
                f"({ratio(r[f'{mode}_bytes'], r['float32_bytes'])}) | "
                f"{r['float32_batch1_ms']:.2f} / {r[f'{mode}_batch1_ms']:.2f} | "
                f"{r['float32_batch32_ms']:.2f} / {r[f'{mode}_batch32_ms']:.2f} |"
            )
    return lm + [""] + image


def lora_table(results):
    """Markdown table of part 2: one row per (task, method), over seeds."""
    runs = {}
    for key, r in results.items():
        _, task, method, _ = key.split("/")
        runs.setdefault((task, method), []).append(r)
    lines = [
        "| task | method | trainable parameters (share) | AdamW state | peak RSS MB "
        "(median) | test accuracy: median (min-max) | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for (task, method), rows in runs.items():
        trainable = rows[0]["trainable_parameters"]
        accuracy = [r["accuracy"] for r in rows]
        lines.append(
            f"| {task} | {method} | {trainable:,} "
            f"({100 * trainable / rows[0]['parameters']:.1f}%) | "
            f"{2 * 4 * trainable / 1e6:.2f} MB | "
            f"{statistics.median(r['peak_rss_mb'] for r in rows):.0f} | "
            f"{statistics.median(accuracy):.3f} "
            f"({min(accuracy):.3f}-{max(accuracy):.3f}) | {len(rows)} |"
        )
    return lines


def save(args, results):
    path = pathlib.Path(args.output)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        model, output_dir, mode, repeats = args.worker.split(":")
        worker = image_worker if model == "image" else causal_lm_worker
        print(json.dumps(worker(pathlib.Path(output_dir), mode, int(repeats))))
        return
    work = pathlib.Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    path = pathlib.Path(args.output)
    results = json.loads(path.read_text()) if path.is_file() else {}
    parts = args.parts.split(",")
    if "quantization" in parts:
        quantization_runs(args, work, results)
    if "lora" in parts:
        lora_runs(args, work, results)
    order = [*args.backends.split(","), *args.modes.split(","), "text", "digits"]
    order += args.lora_methods.split(",")

    def rank(key):  # the flags' order, so that a table reads as they do
        return [order.index(p) if p in order else len(order) for p in key.split("/")]

    for part, tables in (("quantization", quantization_tables), ("lora", lora_table)):
        chosen = {
            k: results[k] for k in sorted(results, key=rank) if k.startswith(part)
        }
        print("\n".join(tables(chosen)) + "\n")


if __name__ == "__main__":
    main()
