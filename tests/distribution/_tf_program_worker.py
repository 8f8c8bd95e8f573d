"""The text programs' --distribute data on 2 logical TensorFlow CPUs
(MirroredStrategy), run as a script: logical devices are configured before
TensorFlow starts.

Pretrains the small masked LM (or fine-tunes the classifier from a preset)
for a few steps on both replicas and again on one device. Prints one JSON
object: each run's train and validation losses.
"""

import os

os.environ["KERAS_BACKEND"] = "tensorflow"

import contextlib  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "applications"))

import finetune_text_classifier  # noqa: E402
import pretrain_mlm  # noqa: E402

# Dropout off: each replica would draw its own masks.
FLAGS = ["--fast", "--steps", "4", "--save-every", "2", "--eval-every", "4"]
FLAGS += ["--dropout", "0"]


def train(program, flags, folder):
    with contextlib.redirect_stdout(sys.stderr):  # stdout: the JSON only
        program.main(FLAGS + flags + ["--output-dir", str(folder)])
    with open(folder / "history.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [float(row["loss"]) for row in rows] + [float(rows[-1]["val_loss"])]


def main(program, folder, preset=None):
    """Trains `program` ("pretrain" or "finetune" from `preset`) in
    `folder` on both replicas, then on one device. TensorFlow's collectives
    are keyed per process: one strategy's run per process."""
    folder = pathlib.Path(folder)
    if program == "pretrain":
        program, flags = pretrain_mlm, []
    else:
        program, flags = finetune_text_classifier, ["--preset", preset]
    losses = {
        name: train(program, flags + ["--distribute", name], folder / name)
        for name in ("data", "none")
    }
    print(json.dumps(losses))


if __name__ == "__main__":
    main(*sys.argv[1:])
