"""LoRA against full fine-tuning, and int8 against float32 serving.

1. LoRA (`--lora-rank`) against full fine-tuning, through the programs, on
   one backend, 3 seeds each; LoRA at the program's learning rate and at
   10 times it:
   - text: finetune_text_classifier.py's offline task (which stdlib package
     a docstring paragraph is from), from pretrain_mlm.py's default preset;
   - images: the digits, train_image_classifier.py from a timm-layout
     checkpoint (safetensors, `timm_state_dict`) of the default gMLP that
     the same program trained on the digits (seed 100) with its head
     removed. The checkpoint has seen the digits (there is no other image
     set offline): this measures how LoRA and full fine-tuning re-learn a
     head and adapt, not transfer.
   Reported: trainable parameters (count and share), AdamW's state for
   them (2 slots x 4 bytes), the run's peak RSS (`os.wait4`), and test
   accuracy (median and range).
2. int8 (and float8) against float32, on each backend, a fresh process each:
   - images: train_image_classifier.py --quantize: test accuracy of both,
     best.keras (saved again without AdamW's state) against
     best_<mode>.keras in bytes, and `predict_on_batch`
     latency at batch 1 and 32 (median of 20 calls after 3 warm-ups);
   - causal LM: train_causal_lm.py --quantize: test perplexity of both,
     the `.keras` file of each in bytes, and greedy generation tokens per
     second (batch 4, 16-token prompts, 48 new tokens, median of 5, the
     float and quantized models interleaved).

    python benchmarks/lora_and_quantization.py             # about 40 min
    python benchmarks/lora_and_quantization.py --parts quantization --backends jax

Writes benchmarks/lora_and_quantization.json (or --output); a rerun skips
the runs already in it.
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
SEEDS = (0, 1, 2)


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="lora,quantization")
    parser.add_argument("--backends", default="jax,tensorflow,torch")
    parser.add_argument("--lora-backend", default="jax")
    parser.add_argument("--lora-rank", type=int, default=4)
    parser.add_argument("--modes", default="int8,float8")
    parser.add_argument(
        "--work-dir", default=str(pathlib.Path(tempfile.gettempdir()) / "lora_quant")
    )
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "lora_and_quantization.json")
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_program(name, flags, backend):
    """Runs applications/<name>.py; returns (its summary, peak RSS in MB)."""
    output_dir = pathlib.Path(flags[flags.index("--output-dir") + 1])
    env = dict(os.environ, KERAS_BACKEND=backend)
    command = [sys.executable, str(ROOT / "applications" / f"{name}.py"), *flags]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{name} {' '.join(flags)} failed:\n{stderr[-3000:]}")
    summary = json.loads((output_dir / "summary.json").read_text())
    return summary, usage.ru_maxrss / 1024


def lora_runs(args, work, results):
    """Part 1: one entry per (task, method, seed)."""
    backend = args.lora_backend
    preset = work / "pretrain" / "final_preset"
    if not (preset / "config.json").is_file():
        run_program("pretrain_mlm", ["--output-dir", str(work / "pretrain")], backend)
    checkpoint = image_checkpoint(work, backend)
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
        lora = ["--lora-rank", str(args.lora_rank)]
        methods = {
            "full": [],
            "lora": lora,
            # LoRA's factors start at zero and want a larger step.
            "lora_10x_lr": [*lora, "--learning-rate", str(10 * rate)],
        }
        for method, extra in methods.items():
            for seed in SEEDS:
                key = f"lora/{task}/{method}/{seed}"
                if key in results:
                    continue
                output_dir = work / key.replace("/", "-")
                summary, peak = run_program(
                    program,
                    [
                        *flags,
                        *extra,
                        "--seed",
                        str(seed),
                        "--output-dir",
                        str(output_dir),
                    ],
                    backend,
                )
                results[key] = {
                    "accuracy": summary[score],
                    "parameters": summary.get("parameters"),
                    "trainable_parameters": summary["trainable_parameters"],
                    "peak_rss_mb": peak,
                    "seconds": summary["seconds"],
                }
                save(args, results)


def image_checkpoint(work, backend):
    """A timm-layout safetensors of the default digits gMLP, head removed."""
    path = work / "digits_gmlp_headless.safetensors"
    if path.is_file():
        return path
    source = work / "digits-source"
    run_program(
        "train_image_classifier",
        ["--seed", "100", "--output-dir", str(source)],
        backend,
    )
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
    """Part 2: one entry per (model, backend, mode)."""
    programs = {
        "image": ("train_image_classifier", "test_accuracy"),
        "causal_lm": ("train_causal_lm", "heldout_perplexity"),
    }
    for backend in args.backends.split(","):
        for mode in args.modes.split(","):
            for model, (program, score) in programs.items():
                key = f"quantization/{model}/{backend}/{mode}"
                if key in results:
                    continue
                output_dir = work / key.replace("/", "-")
                flags = ["--quantize", mode, "--output-dir", str(output_dir)]
                if model == "causal_lm":
                    flags += ["--samplers", "greedy"]
                summary, _ = run_program(program, flags, backend)
                timings = run_worker(backend, model, output_dir, mode)
                results[key] = {
                    "float32": summary[score],
                    mode: summary[f"{score}_{mode}"],
                    **timings,
                }
                save(args, results)


def run_worker(backend, model, output_dir, mode):
    env = dict(os.environ, KERAS_BACKEND=backend)
    command = [sys.executable, __file__, "--worker", f"{model}:{output_dir}:{mode}"]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(
            f"worker {model} on {backend} failed:\n{result.stderr[-3000:]}"
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


def image_worker(output_dir, mode):
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
                lambda m=model, x=images: m.predict_on_batch(x), 20, 3
            )
            facts[f"{name}_batch{batch}_ms"] = 1000 * seconds
    return facts


def causal_lm_worker(output_dir, mode):
    """Sizes and greedy generation speed of the float and quantized LM."""
    import warnings

    import numpy as np

    from keras_gmlp.models import gMLPCausalLM

    facts = {}
    prompts = np.random.default_rng(0).integers(5, 500, (4, 64)).astype("int32")
    mask = np.arange(64)[None, :] < 16
    inputs = {
        "token_ids": np.where(mask, prompts, 0),
        "padding_mask": mask.repeat(4, 0),
    }
    models = {}
    for name in ("float32", mode):
        causal_lm = gMLPCausalLM.from_preset(str(output_dir / "final_preset"))
        causal_lm.preprocessor = None
        if name == mode:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                causal_lm.backbone.quantize(mode)
        path = output_dir / f"lm_{name}.keras"
        causal_lm.save(path)
        facts[f"{name}_bytes"] = path.stat().st_size
        causal_lm.compile(sampler="greedy")
        causal_lm.generate(inputs, stop_token_ids=None)  # warm-up
        models[name] = causal_lm
    # Interleaved, so that load from other processes hits both alike.
    times = {name: [] for name in models}
    for _ in range(5):
        for name, causal_lm in models.items():
            start = time.perf_counter()
            causal_lm.generate(inputs, stop_token_ids=None)
            times[name].append(time.perf_counter() - start)
    for name, seconds in times.items():
        facts[f"{name}_tokens_per_second"] = 4 * 48 / statistics.median(seconds)
    return facts


def save(args, results):
    path = pathlib.Path(args.output)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    temporary.replace(path)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        model, output_dir, mode = args.worker.split(":")
        worker = image_worker if model == "image" else causal_lm_worker
        print(json.dumps(worker(pathlib.Path(output_dir), mode)))
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
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
