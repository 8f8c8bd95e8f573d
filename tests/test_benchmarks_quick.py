"""The throughput benchmark's smoke run, so the harness cannot rot."""

import os
import pathlib
import subprocess
import sys

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


# The harness, not the backend, is what this checks (the benchmark's own
# numbers come from full runs): CI runs it in one lane.
@pytest.mark.slow
@pytest.mark.backend_independent
def test_quick_run_prints_a_table():
    backend = keras.backend.backend()
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "throughput.py"),
            "--quick",
            "--keep-freed-memory",
            "--backends",
            backend,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, KERAS_BACKEND=backend),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [
        line.split()
        for line in result.stdout.splitlines()
        if line.startswith(("image ", "text "))
    ]
    ours = [row for row in rows if f"keras-{backend}" in row]
    assert ours, result.stdout
    # A row holds a measured throughput, not an error message.
    assert all(float(row[7]) > 0 for row in ours), result.stdout
