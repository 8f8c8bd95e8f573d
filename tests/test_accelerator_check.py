"""benchmarks/accelerator.py, the GPU check, at `--quick` sizes on this CPU
(CI never has a GPU): its checks pass on JAX and PyTorch, every speed row
holds a figure or says why not, and its arithmetic (memory line,
accumulation, ratios) is right."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "benchmarks", "accelerator.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _accelerator import kernel_sources  # noqa: E402
from _accelerator import memory  # noqa: E402
from _accelerator import plan  # noqa: E402
from _accelerator import pool  # noqa: E402
from _accelerator import report  # noqa: E402
from _accelerator import schedule  # noqa: E402

# The check runs both Keras backends in subprocesses of its own, whatever
# KERAS_BACKEND is: CI runs it in one lane.
pytestmark = pytest.mark.backend_independent


@pytest.mark.slow
def test_quick_run_passes_its_checks_on_jax_and_torch(tmp_path):
    out = tmp_path / "out"
    work = tmp_path / "work"
    result = subprocess.run(
        [sys.executable, PROGRAM, "--quick", "--out", str(out), "--workdir", str(work)],
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
    # Each profile names what its costliest fusions compute, from XLA's dump.
    profiles = [r for r in rows if r["section"] == "profile"]
    assert profiles and all(
        any("ops" in entry.get("computes", {}) for entry in r["top"]) for r in profiles
    ), profiles
    assert (out / "accelerator.txt").read_text().startswith("section")
    assert not list(out.glob("*.partial"))
    # What the device tool brings back: at most 8 files.
    assert sorted(p.name for p in out.iterdir()) == [
        "accelerator.json",
        "accelerator.txt",
        "expected_seconds.json",
        "results.jsonl",
        "workers.log",
    ]
    # Every row of the plan has a result, in the plan's order, and the
    # expected seconds come back refreshed with what ran.
    keys = [row.key for row in plan.build(quick=True)]
    assert [report.row_key(r) for r in rows] == keys
    refreshed = json.loads((out / "expected_seconds.json").read_text())["quick"]
    ran = [r for r in rows if "seconds" in r and "key" in r]
    assert {report.row_key(r) for r in ran} <= set(refreshed["rows"])
    assert set(refreshed["start"]) == set(plan.WORKERS)


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


def expected_table(rows=None, start=None, guesses=None):
    table = {
        "full": {"rows": rows or {}, "start": start or {}, "guesses": guesses or {}}
    }
    return schedule.ExpectedSeconds(table, "full")


def rehearse(rows, expected, budget_s, seconds=None, start_s=None):
    """The schedule on a fake clock: (key, outcome) per row, and the pool."""
    fake = schedule.RehearsalPool(expected, seconds, start_s)
    outcomes = []

    def record(row, fields):
        outcomes.append(
            (row.key, fields.get("skipped") or fields.get("error") or "ran")
        )

    schedule.run(rows, expected, budget_s, fake, record, fake.clock)
    return outcomes, fake


def test_the_schedule_runs_the_decisive_rows_and_says_why_it_skips_the_rest():
    rows = plan.build(quick=False)
    assert [row.tier for row in rows] == sorted(row.tier for row in rows)
    # Every worker starts in 10 s and every row takes 5 s, but timm's compiled
    # gMLP-S training, which takes 100 s (40 s expected), and PyTorch's
    # mixed step, which hangs: a 400 s deadline.
    compiled = "peers gmlp_s16 train bfloat16 timm-compile"
    hangs = "keras-torch mixed_bfloat16 training step"
    too_long = "peers bert_base train bfloat16 bert-compile"
    expected = expected_table(
        rows={r.key: 5.0 for r in rows} | {compiled: 40.0, too_long: 150.0},
        start=dict.fromkeys(plan.WORKERS, 10.0),
    )
    outcomes, fake = rehearse(
        rows,
        expected,
        400.0,
        seconds={compiled: 100.0, hangs: 10_000.0},
        start_s=dict.fromkeys(plan.WORKERS, 10.0),
    )
    by_key = dict(outcomes)
    # Every other correctness row runs; the hung one is stopped after its
    # time-out (4x its expected seconds, at least 120 s) and says so.
    assert all(by_key[r.key] == "ran" for r in rows if r.tier == 1 and r.key != hangs)
    assert by_key[hangs] == "no result in 120 s"
    # The long row runs while it is expected to fit, and the time it took
    # is what the next run expects.
    assert by_key[compiled] == "ran"
    assert expected.rows[compiled] == 100.0
    skipped = [(key, outcome) for key, outcome in outcomes if outcome != "ran"][1:]
    assert len(skipped) > 10, outcomes
    for key, outcome in skipped:
        # "time budget: expected 15 s, 3 s left" (a worker's start added).
        needs, left = re.findall(r"expected (\d+) s, (\d+) s left", outcome)[0]
        assert float(needs) > float(left), (key, outcome)
    # The deadline holds: nothing started that was expected to end past it.
    assert fake.clock() <= 400.0
    # A row skipped for time is followed by shorter ones that still fit.
    # Before BERT's compiled row: 3 starts (30 s), 15 correctness rows (75 s)
    # and the hung one (120 s); gMLP-S training's 5 rows (timm's 100 s and
    # PyTorch's worker started again, 10 s: 130 s) and BERT eager (5 s):
    # 360 s, 40 s left.
    assert skipped[0] == (too_long, "time budget: expected 150 s, 40 s left")
    after = [key for key, _ in outcomes].index(too_long) + 1
    assert by_key[[key for key, _ in outcomes][after]] == "ran"


def test_unmeasured_rows_are_expected_from_the_guesses_then_the_default():
    rows = {r.key: r for r in plan.build(quick=False)}
    expected = expected_table(guesses={"timm-compile": 70.0, "peers": 3.0})
    assert expected.row(rows["peers gmlp_s16 train bfloat16 timm-compile"]) == 70.0
    assert expected.row(rows["peers gmlp_s16 train bfloat16 timm-eager"]) == 3.0
    assert (
        expected.row(rows["keras-jax mixed_bfloat16 training step"])
        == schedule.DEFAULT_ROW_S
    )
    assert expected.start("keras-jax") == schedule.DEFAULT_START_S
    # The shipped table has a figure for every row of the full plan.
    shipped = schedule.ExpectedSeconds.load(schedule.EXPECTED_PATH, "full")
    assert all(shipped.row(row) > 0 for row in rows.values())


def test_a_hung_row_is_stopped_and_recorded_and_its_worker_starts_again(tmp_path):
    # A worker that answers its first row and hangs on the second.
    script = tmp_path / "worker.py"
    script.write_text(
        "import json, sys, time\n"
        "for n, line in enumerate(sys.stdin):\n"
        "    if n == 1: time.sleep(60)\n"
        "    row = dict(key=line.strip(), value=1.0, seconds=0.0)\n"
        f"    open({str(tmp_path / 'results.jsonl')!r}, 'a').write(json.dumps(row) + '\\n')\n"
    )
    (tmp_path / "results.jsonl").write_text("")
    workers = pool.Pool(
        lambda worker: [sys.executable, str(script)],
        str(tmp_path),
        lambda worker: None,
        grace_s=1.0,
    )
    rows = [r for r in plan.build(quick=True) if r.worker == "keras-jax"][:3]
    try:
        first, _, start_s = workers.run(rows[0], timeout_s=30)
        assert first["value"] == 1.0 and start_s is not None
        begin = time.time()
        hung, seconds, _ = workers.run(rows[1], timeout_s=1.5)
        assert "no result in 2 s" in hung["error"] and time.time() - begin < 10
        assert not workers.is_running("keras-jax")
        third, _, start_s = workers.run(rows[2], timeout_s=30)
        assert third["value"] == 1.0 and start_s is not None
    finally:
        workers.stop_all()


def test_a_memory_worker_runs_alone():
    expected = expected_table()
    fake = schedule.RehearsalPool(expected)
    rows = {r.key: r for r in plan.build(quick=True)}
    fake.run(rows["keras-jax cached = full-forward greedy"], 100)
    fake.run(rows["peers matmul float32"], 100)
    assert fake.running == {"keras-jax", "peers"}
    fake.run(rows["memory-jax gmlp_base batch 1 peak memory"], 100)
    assert fake.running == {"memory-jax"}


def document(gpu, *rows):
    return dict(host=dict(gpu=gpu), failed=[], results=list(rows))


def test_merge_gives_ratios_from_the_rows_of_two_calls(tmp_path):
    first = document(
        "H200",
        dict(section="peak", item="matmul bfloat16", worker="peers", value=800.0),
        speed_row("images", "gmlp_s16", "bfloat16", "timm-compile", 4000.0, 100.0),
        dict(
            speed_row("images", "gmlp_s16", "bfloat16", "keras-jax", 0, 0),
            skipped="time budget",
        ),
    )
    second = document(
        "H200",
        speed_row("images", "gmlp_s16", "bfloat16", "keras-jax", 3000.0, 75.0),
        dict(
            speed_row("images", "gmlp_s16", "bfloat16", "timm-compile", 0, 0),
            skipped="time budget",
        ),
    )
    paths = []
    for name, content in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps(content))
        paths.append(str(tmp_path / name))
    out = tmp_path / "merged"
    result = subprocess.run(
        [sys.executable, PROGRAM, "--merge", *paths, "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "0.75x timm-compile" in result.stdout  # 3000 / 4000
    merged = json.loads((out / "accelerator.json").read_text())
    values = {report.row_key(r): r.get("value") for r in merged["results"]}
    assert values["peers gmlp_s16 train bfloat16 timm-compile"] == 4000.0
    assert values["keras-jax gmlp_s16 train bfloat16 keras-jax"] == 3000.0
    assert merged["host"]["merged_from"] == 2 and "warning" not in merged["host"]
    host, _ = report.merge([first, document("H100", *second["results"])])
    assert "different devices" in host["warning"]


def test_a_second_call_runs_what_the_first_did_not_measure(tmp_path):
    rows = plan.build(quick=True)
    measured = {
        "keras-jax mixed_bfloat16 training step",
        "memory-jax gmlp_base batch 1 peak memory",
    }
    earlier = document(
        "H200",
        *[
            dict(section=r.section, item=r.item, worker=r.worker)
            | ({"value": 1.0} if r.key in measured else {"skipped": "time budget"})
            for r in rows
        ],
    )
    path = tmp_path / "a.json"
    path.write_text(json.dumps(earlier))
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import accelerator

    args = accelerator.parse_args(["--quick", "--missing-from", str(path)])
    keys = [row.key for row in accelerator.selected_rows(args)]
    assert "keras-jax mixed_bfloat16 training step" not in keys
    # The memory probe reruns: the largest batch needs it in the same process.
    assert "memory-jax gmlp_base batch 1 peak memory" in keys
    assert len(keys) == len(rows) - 1
    args = accelerator.parse_args(["--quick", "--rows", "^keras-torch .*greedy"])
    assert [row.key for row in accelerator.selected_rows(args)] == [
        "keras-torch cached = full-forward greedy"
    ]


def test_dry_run_prints_the_schedule_without_keras():
    result = subprocess.run(
        [sys.executable, PROGRAM, "--dry-run", "--budget-s", "60"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "peers matmul bfloat16" in result.stdout
        and "time budget: expected" in result.stdout
    )
    assert "ends at about" in result.stdout.splitlines()[-1]


# Two kernels of a GPU module as XLA prints it: a loop fusion with a tuple
# shape, inside a command buffer, and a Triton GEMM.
DUMPED_MODULE = """HloModule jit_train_step

fused_computation.12 {
  param_0 = bf16[8,196,768]{2,1,0} parameter(0)
  multiply.3 = bf16[8,196,768]{2,1,0} multiply(param_0, param_0), metadata={op_name="jit(train_step)/transpose(jvp(sgu))/mul"}
  convert.4 = f32[8,196,768]{2,1,0} convert(multiply.3), metadata={op_name="jit(train_step)/transpose(jvp(sgu))/convert_element_type"}
  ROOT reduce.5 = f32[196]{0} reduce(convert.4, c), dimensions={0,2}, to_apply=region_0.1, metadata={op_name="jit(train_step)/transpose(jvp(sgu))/mul"}
}

gemm_fusion_dot.2_computation {
  p = bf16[196,196]{1,0} parameter(0)
  ROOT dot.1 = bf16[196,196]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main.9 {
  p0 = bf16[8,196,768]{2,1,0} parameter(0)
  fusion.12 = (f32[196]{0}, bf16[8,196,768]{2,1,0}) fusion(p0), kind=kInput, calls=fused_computation.12, metadata={op_name="jit(train_step)/transpose(jvp(sgu))/reduce_sum"}
  ROOT gemm_fusion_dot.2 = bf16[196,196]{1,0} fusion(p0), kind=kCustom, calls=gemm_fusion_dot.2_computation
}
"""


def test_profiled_kernels_are_named_by_what_they_compute(tmp_path):
    profiled = (
        tmp_path / "module_0002.jit_train_step.sm_9.0_gpu_after_optimizations.txt"
    )
    profiled.write_text(DUMPED_MODULE)
    # Another model's step, compiled later: it defines one of the names only.
    other = tmp_path / "module_0004.jit_train_step.sm_9.0_gpu_after_optimizations.txt"
    other.write_text(DUMPED_MODULE.replace("fusion.12", "fusion.99"))
    os.utime(other, (time.time() + 5, time.time() + 5))
    top = [
        {"kernel": "command_buffer_3 (fusion_12)", "ms": 2.0},
        {"kernel": "gemm_fusion_dot.2 (gemm_fusion_dot_2)", "ms": 1.0},
        {"kernel": "command_buffer_3 (nvjet_sm90_tst_128x128)", "ms": 0.5},
    ]
    described = kernel_sources.describe(top, str(tmp_path))
    assert described[0]["computes"] == {
        "opcode": "fusion",
        "shape": "(f32[196]{0}, bf16[8,196,768]{2,1,0})",
        "kind": "kInput",
        "ops": {"multiply": 1, "convert": 1, "reduce": 1},
        "origins": [
            "jit(train_step)/transpose(jvp(sgu))/mul",
            "jit(train_step)/transpose(jvp(sgu))/convert_element_type",
        ],
        "op": "jit(train_step)/transpose(jvp(sgu))/reduce_sum",
    }
    assert described[1]["computes"]["ops"] == {"dot": 1}
    assert described[1]["computes"]["kind"] == "kCustom"
    # cuBLAS's kernels have no HLO of their own; nothing dumped, nothing said.
    assert "computes" not in described[2]
    assert kernel_sources.describe(top, None) == top
    assert kernel_sources.describe(top, str(tmp_path / "none")) == top
