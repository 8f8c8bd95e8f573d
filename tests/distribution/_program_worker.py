"""`pretrain_mlm.py --distribute model` on 8 virtual CPU devices, run as a
script (XLA reads the device count when jax is first imported).

Trains the small masked LM for a few steps sharded over a (2, 4) mesh and
again on one device, in this process, and prints one JSON object: the
variables whose sharding differs from the layout map's, how many are
sharded, and both runs' losses and held-out perplexities.
"""

import os

os.environ["KERAS_BACKEND"] = "jax"
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
)

import contextlib  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import keras  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "applications"))

import pretrain_mlm  # noqa: E402
from _text_training import training as text_training  # noqa: E402

from keras_gmlp.distribution import get_layout_map  # noqa: E402
from tests.distribution._jax_worker import check_layouts  # noqa: E402

FLAGS = ["--fast", "--steps", "4", "--save-every", "2", "--eval-every", "4"]
TRAINERS = []


def capture_trainer(*args, **kwargs):
    trainer, history = FIT_TASK(*args, **kwargs)
    TRAINERS.append(trainer)
    return trainer, history


FIT_TASK = text_training.fit_task
text_training.fit_task = capture_trainer


def train(flags, folder):
    keras.distribution.set_distribution(None)
    # stdout carries only the JSON result.
    with contextlib.redirect_stdout(sys.stderr):
        summary = pretrain_mlm.main(FLAGS + flags + ["--output-dir", str(folder)])
    rows = _history(folder)
    losses = [float(row["loss"]) for row in rows] + [float(rows[-1]["val_loss"])]
    return summary["heldout_masked_token_perplexity"], losses


def _history(folder):
    import csv

    with open(folder / "history.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def main():
    folder = pathlib.Path(tempfile.mkdtemp())
    sharded = train(["--distribute", "model", "--model-shards", "4"], folder / "model")
    trainer = TRAINERS[-1]
    mesh = keras.distribution.DeviceMesh(
        (2, 4), ("batch", "model"), keras.distribution.list_devices()
    )
    mismatches = check_layouts(trainer, get_layout_map(mesh))
    count = sum(
        any(axis is not None for axis in v.value.sharding.spec) for v in trainer.weights
    )
    single = train([], folder / "one")
    result = {
        "devices": len(keras.distribution.list_devices()),
        "layout_mismatches": mismatches,
        "sharded_variables": count,
        "perplexities": [sharded[0], single[0]],
        "losses": [sharded[1], single[1]],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
