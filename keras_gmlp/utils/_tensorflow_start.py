"""TensorFlow's failed CUDA start-up, kept off stderr on a machine without
a GPU driver (standard library only).

A CUDA build of TensorFlow initialises its devices on first use, and on a
machine with no GPU driver it logs `failed call to cuInit ... (303)` at the
error level: nothing is wrong with a run on the CPU. When TensorFlow is
loaded (the TensorFlow backend, or keras-hub in `keras_gmlp.models`),
`import keras_gmlp` initialises its devices with file descriptor 2
captured and writes back every captured line but that one, unless a GPU
was found. applications/_shared/logs.py does the same for the programs
(which also hide the start-up lines below TF_CPP_MIN_LOG_LEVEL).
"""

import os
import sys
import tempfile

_NO_GPU_DRIVER = "failed call to cuInit"


def initialise_tensorflow_devices_quietly():
    """Lists TensorFlow's GPUs (which initialises its devices) with fd 2
    captured, if TensorFlow is loaded; writes back every captured line
    except the failed CUDA start-up of a machine without a GPU."""
    tf = sys.modules.get("tensorflow")
    config = getattr(tf, "config", None)
    if config is None:  # not loaded, or still loading
        return
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    gpus = []
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            gpus = config.list_physical_devices("GPU")
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
        capture.seek(0)
        captured = capture.read().decode("utf-8", errors="replace")
    for line in captured.splitlines(keepends=True):
        if gpus or _NO_GPU_DRIVER not in line:
            sys.stderr.write(line)
    sys.stderr.flush()
