"""Runs the text programs (applications/pretrain_mlm.py,
finetune_text_classifier.py, train_causal_lm.py) for their tests.

Training runs call the program's `main(argv)` in the test process, which
saves the seconds of importing TensorFlow and keras-hub again per run, and
lets a test interrupt a run after an epoch. Flag errors run the program as a
subprocess, as a user would: they must answer before Keras is imported.
"""

import atexit
import importlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import keras

ROOT = pathlib.Path(__file__).resolve().parents[3]
APPLICATIONS = ROOT / "applications"


def load_program(name):
    """The module of applications/<name>.py (pytest's `pythonpath` has
    applications/, where the programs and their shared packages are)."""
    return importlib.import_module(name)


def run_command(program, *args, cwd=None, timeout=60):
    """Runs applications/<program> in a subprocess; returns the
    CompletedProcess (text output)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, str(APPLICATIONS / program), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env=env,
    )


def read_summary(output_dir):
    return json.loads((pathlib.Path(output_dir) / "summary.json").read_text())


def leftovers(output_dir):
    """Temporary files or folders a run should not leave behind."""
    return sorted(
        p.name for p in pathlib.Path(output_dir).iterdir() if p.name.startswith(".")
    )


_FAST_PRETRAINING = {}


def fast_pretraining_dir():
    """The output folder of `pretrain_mlm.py --fast`, run once per test
    session and backend (the fine-tuning tests start from its preset)."""
    backend = keras.backend.backend()
    if backend not in _FAST_PRETRAINING:
        folder = tempfile.mkdtemp(prefix="pretrain_mlm_fast_")
        atexit.register(shutil.rmtree, folder, True)
        load_program("pretrain_mlm").main(["--fast", "--output-dir", folder])
        _FAST_PRETRAINING[backend] = pathlib.Path(folder)
    return _FAST_PRETRAINING[backend]


def tensorboard_scalars(folder):
    """{tag: {step: value}} of the scalars in the TensorBoard event files in
    `folder`, read with the TFRecord framing and the event protocol buffer
    alone (no TensorFlow): each record is its length (8 bytes, little
    endian), a 4-byte check of it, the record and a 4-byte check."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    scalars = {}
    for path in sorted(pathlib.Path(folder).glob("events.out.tfevents.*")):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<Q", data, offset)
            event = Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars
