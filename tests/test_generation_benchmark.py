import os
import subprocess
import sys

import keras

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_generation_benchmark_quick_run():
    """The generation benchmark runs on this backend, and cached and
    uncached greedy decoding produce the same tokens."""
    backend = keras.backend.backend()
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "generation.py"),
            "--quick",
            "--backends",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith(backend)]
    assert len(rows) == 2, result.stdout
    assert all(line.split()[-1] == "True" for line in rows), result.stdout
