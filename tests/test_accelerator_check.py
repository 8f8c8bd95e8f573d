"""benchmarks/accelerator.py, the GPU check, at `--quick` sizes on this CPU
(CI never has a GPU): its checks pass on JAX and PyTorch, every speed row
holds a figure or says why not, and its arithmetic (memory line,
accumulation, ratios) is right."""

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "benchmarks", "accelerator.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _accelerator import memory  # noqa: E402
from _accelerator import report  # noqa: E402

# The check runs both Keras backends in subprocesses of its own, whatever
# KERAS_BACKEND is: CI runs it in one lane.
pytestmark = pytest.mark.backend_independent


@pytest.mark.slow
def test_quick_run_passes_its_checks_on_jax_and_torch(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, PROGRAM, "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    document = json.loads((out / "accelerator.json").read_text())
    assert document["failed"] == []
    rows = document["results"]
    for worker in ("keras-jax", "keras-torch"):
        checks = {
            r["section"] for r in rows if r["worker"] == worker and r.get("passed")
        }
        assert checks == {"parity", "generation", "mixed"}, (worker, rows)
        speeds = [
            r
            for r in rows
            if r["worker"] == worker and r.get("unit") in ("images/s", "tokens/s")
        ]
        assert speeds and all(r["value"] > 0 for r in speeds), speeds
    for worker in ("memory-jax", "memory-torch"):
        paper = [
            r for r in rows if r["worker"] == worker and "paper batch" in r["item"]
        ]
        # 8 sequences where the largest that ran is 2: 4 steps of 2.
        assert [(r["value"], r["micro_batch"]) for r in paper] == [(4, 2)], rows
    assert (out / "accelerator.txt").read_text().startswith("section")
    assert not list(out.glob("*.partial"))


def test_help_is_fast_and_bad_flags_are_refused():
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, PROGRAM, "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and time.perf_counter() - start < 3
    result = subprocess.run(
        [sys.executable, PROGRAM, "--jobs", "peers,keras-tf"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "--jobs" in result.stderr and "keras-tf" in result.stderr


def test_largest_batch_is_read_off_the_memory_line():
    gib = 2**30
    # 10 GiB fixed, 0.5 GiB a sequence; 80 GiB card, 92% usable: 73.6 GiB
    # leaves 63.6 / 0.5 = 127.2 sequences, so 120 (a multiple of 8).
    probes = {8: 10 * gib + 4 * gib, 32: 10 * gib + 16 * gib}
    largest, per_sequence = memory.predicted_largest(probes, 80 * gib)
    assert (largest, per_sequence) == (120, 0.5 * gib)


@pytest.mark.parametrize(
    "total, largest, expected",
    [(256, 300, (1, 256)), (256, 120, (4, 64)), (256, 128, (2, 128)), (8, 3, (4, 2))],
)
def test_accumulation_splits_the_paper_batch(total, largest, expected):
    assert memory.accumulation(total, largest) == expected


def speed_row(section, model, precision, runner, value, tflops):
    worker = runner if runner.startswith("keras") else "peers"
    return dict(
        section=section,
        item=f"{model} train {precision} {runner}",
        worker=worker,
        runner=runner,
        model=model,
        mode="train",
        precision=precision,
        value=value,
        unit="images/s" if section == "images" else "tokens/s",
        tflops=tflops,
    )


def test_table_gives_mfu_and_ratios_against_the_same_peer_row():
    rows = [
        dict(section="peak", item="matmul bfloat16", worker="peers", value=800.0),
        speed_row("images", "gmlp_s16", "bfloat16", "timm-eager", 2000.0, 200.0),
        speed_row("images", "gmlp_s16", "float32", "timm-eager", 500.0, 50.0),
        speed_row("images", "gmlp_s16", "bfloat16", "keras-jax", 3000.0, 300.0),
        speed_row("mlm", "gmlp_base", "bfloat16", "keras-jax", 100.0, 1.0),
        speed_row("mlm", "bert_base", "bfloat16", "bert-eager", 400.0, 1.0),
        dict(section="parity", item="x", worker="keras-jax", value=2e-6, passed=False),
    ]
    text = report.table(rows)
    assert "MFU 37.5%" in text  # 300 of 800 TFLOP/s
    assert "1.50x timm-eager" in text and "0.25x bert-eager" in text
    assert "x  FAIL" not in text and "FAIL" in text
    assert report.speed_ratios(rows)[0].endswith("1.50x timm-eager")
