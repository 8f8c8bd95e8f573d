"""gMLP-S images/s the way a user runs it, against timm run the same way.

`throughput.py` interleaves its contenders inside long-lived workers. This
checks its numbers against the plain user path: a fresh process per backend
builds `keras_gmlp.applications.gMLPS(weights=None)`, compiles it with
Keras' defaults (`jit_compile="auto"`) and AdamW, and times
`predict_on_batch`, `train_on_batch`, `predict` and `fit` on in-memory numpy
batches. A second row does the same with the keras-hub task,
`gMLPImageClassifier` on a gMLP-S `gMLPImageBackbone`, compiled with the
task's own defaults. timm's `gmlp_s16_224` runs eagerly in its own process, before and
after the Keras backends, with the same batch, loss and optimizer; the ratios
use the mean of its two runs.

    python benchmarks/user_style.py --timm-python /path/to/python-with-timm
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
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--steps",
        type=int,
        default=6,
        help="timed steps per measurement (after 2 untimed)",
    )
    parser.add_argument(
        "--timm-python", default=sys.executable, help="an interpreter that imports timm"
    )
    parser.add_argument(
        "--worker", choices=["keras", "task", "timm"], help=argparse.SUPPRESS
    )
    return parser.parse_args(argv)


def timed(step, steps):
    step()
    step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def builder_model():
    """The builder's `keras.Model`, compiled with Keras' defaults and AdamW."""
    import keras

    from keras_gmlp.applications import gMLPS

    model = gMLPS(weights=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4),
        loss="sparse_categorical_crossentropy",
    )
    return model


def task_model():
    """The keras-hub task on gMLP-S, compiled with the task's defaults."""
    from keras_gmlp.models import gMLPImageBackbone
    from keras_gmlp.models import gMLPImageClassifier
    from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS

    variant = GMLP_IMAGE_VARIANTS["gmlp_s16"]
    backbone = gMLPImageBackbone(
        patch_size=variant["patch_size"],
        num_layers=variant["num_blocks"],
        hidden_dim=variant["hidden_dim"],
        intermediate_dim=variant["intermediate_dim"],
    )
    model = gMLPImageClassifier(backbone, num_classes=1000)
    model.compile()
    return model


def keras_worker(args):
    import numpy as np

    batch = args.batch_size
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 255, (batch, 224, 224, 3)).astype("float32")
    y = rng.integers(0, 1000, (batch,))
    model = task_model() if args.worker == "task" else builder_model()
    images = {
        "predict_on_batch": batch
        / timed(lambda: model.predict_on_batch(x), args.steps),
        "train_on_batch": batch / timed(lambda: model.train_on_batch(x, y), args.steps),
    }
    xs = np.concatenate([x] * args.steps)
    ys = np.concatenate([y] * args.steps)
    images["predict"] = len(xs) / timed(
        lambda: model.predict(xs, batch_size=batch, verbose=0), 1
    )
    images["fit"] = len(xs) / timed(
        lambda: model.fit(xs, ys, batch_size=batch, epochs=1, verbose=0), 1
    )
    return images


def timm_worker(args):
    import timm
    import torch

    batch = args.batch_size
    torch.manual_seed(0)
    model = timm.create_model("gmlp_s16_224")
    x = torch.rand(batch, 3, 224, 224) * 255
    y = torch.randint(0, 1000, (batch,))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    def infer():
        model.eval()
        with torch.no_grad():
            model(x)

    def train():
        model.train()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return {
        "infer": batch / timed(infer, args.steps),
        "train": batch / timed(train, args.steps),
    }


def run(command, env):
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"{command[-1]} failed:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        worker = timm_worker if args.worker == "timm" else keras_worker
        print(json.dumps(worker(args)), flush=True)
        return
    here = os.path.abspath(__file__)
    flags = ["--batch-size", str(args.batch_size), "--steps", str(args.steps)]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(here)), os.environ.get("PYTHONPATH", "")]
        ),
    )
    timm_command = [args.timm_python, here, *flags, "--worker", "timm"]
    timm_runs = [run(timm_command, env)]
    ours = {}
    for backend in args.backends.split(","):
        for worker in ("keras", "task"):
            row = backend if worker == "keras" else f"{backend}, task"
            ours[row] = run(
                [sys.executable, here, *flags, "--worker", worker],
                dict(env, KERAS_BACKEND=backend),
            )
            print(
                row,
                json.dumps({k: round(v, 2) for k, v in ours[row].items()}),
                flush=True,
            )
    timm_runs.append(run(timm_command, env))
    timm = {k: statistics.mean(r[k] for r in timm_runs) for k in ("infer", "train")}
    print(
        f"\ntimm eager img/s: inference {timm['infer']:.2f} "
        f"({timm_runs[0]['infer']:.2f} before, {timm_runs[1]['infer']:.2f} after), "
        f"training {timm['train']:.2f} "
        f"({timm_runs[0]['train']:.2f} before, {timm_runs[1]['train']:.2f} after)"
    )
    print("\n| backend | predict_on_batch | predict | train_on_batch | fit |")
    print("|---|---|---|---|---|")
    for backend, images in ours.items():
        cells = [
            f"{images[k]:.2f} ({images[k] / timm[ref]:.2f}x)"
            for k, ref in (
                ("predict_on_batch", "infer"),
                ("predict", "infer"),
                ("train_on_batch", "train"),
                ("fit", "train"),
            )
        ]
        print(f"| {backend} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
