"""The models and programs on one GPU, against timm and transformers on the
same card: correct (timm parity in full float32 and at the default
precision, cached generation, a mixed_bfloat16 step) and fast (images/s,
masked-LM tokens/s and MFU, the largest batch, generation tokens/s), on the
JAX and PyTorch Keras backends.

On the GPU host (Python 3.12 with PyTorch, JAX, timm and transformers, no
Keras, keras-hub or TensorFlow, no package index), first build the wheels
here, then run one command there:

    bash benchmarks/_accelerator/wheels.sh          # here: .whl/, < 64 MiB
    bash benchmarks/_accelerator/device.sh          # there, carrying .whl

`device.sh` installs the wheels into /tmp/site and runs this program,
which writes `accelerator.json`, `accelerator.txt`, the refreshed
`expected_seconds.json`, `results.jsonl` (each row as it ended) and
`workers.log` to `--out` ($OUT there). The rows run in the order
of what they decide (correctness, then the headline bfloat16 rows, then
float32) in worker processes that stay up between their rows, inside one
deadline (`--budget-s`): a row whose expected seconds no longer fit is
skipped with both figures, and a shorter one after it may still run.

    .venv/bin/python benchmarks/accelerator.py --dry-run     # what would run in the budget
    .venv/bin/python benchmarks/accelerator.py --quick       # the same code on a CPU, tiny sizes
    .venv/bin/python benchmarks/accelerator.py --missing-from A/accelerator.json   # a second call
    .venv/bin/python benchmarks/accelerator.py --merge A/accelerator.json B/accelerator.json

`bash benchmarks/_accelerator/rehearse.sh` runs the GPU host's command in a
virtual environment of its versions.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from _accelerator.plan import WORKERS
from _flags import FlagParser

VERSIONS = (
    "torch",
    "jax",
    "jaxlib",
    "keras",
    "keras-hub",
    "keras-gmlp",
    "timm",
    "transformers",
    "numpy",
)


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument(
        "--out",
        default=os.path.join("outputs", "accelerator"),
        help="folder for accelerator.json, accelerator.txt and the workers' logs",
    )
    parser.add_argument(
        "--workdir",
        default=os.path.join("outputs", "accelerator-work"),
        help="folder kept between calls on one machine: timm's reference "
        "weights and logits, JAX's and inductor's compilation caches",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a CPU")
    parser.add_argument(
        "--compile-at-quick",
        action="store_true",
        help="with --quick, the torch.compile rows too (minutes on a CPU)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="seconds for the whole run (default 420)",
    )
    parser.add_argument(
        "--jobs",
        default=",".join(WORKERS),
        help="comma-separated worker processes whose rows run (default all)",
    )
    parser.add_argument(
        "--rows", help="a regular expression: only rows whose 'worker item' matches"
    )
    parser.add_argument(
        "--missing-from",
        metavar="JSON",
        help="an earlier accelerator.json: only the rows it has no result for",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="no run: one table, with ratios, from these runs' accelerator.json",
    )
    parser.add_argument(
        "--expected",
        default=None,
        help="expected seconds per row (default: the shipped "
        "benchmarks/_accelerator/expected_seconds.json)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="no run: the rows in order, their expected seconds and which fit",
    )
    parser.add_argument(
        "--kernels",
        choices=("auto", "fast", "plain"),
        default="auto",
        help="the Keras workers' kernel forms (keras_gmlp.layers._kernels."
        "use_kernels): auto (the library's choice per device), fast (every "
        "fast form, e.g. the spatial projection as batched products, never "
        "yet timed on a card) or plain (Keras' formulas)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.jobs.split(",")) - set(WORKERS))
    if unknown:
        parser.error(f"argument --jobs: unknown {unknown}; allowed: {list(WORKERS)}")
    if args.budget_s <= 0:
        parser.error(f"argument --budget-s: must be positive, received {args.budget_s}")
    if args.rows:
        try:
            re.compile(args.rows)
        except re.error as error:
            parser.error(f"argument --rows: not a regular expression ({error})")
    for path in (args.merge or []) + [p for p in [args.missing_from] if p]:
        if not os.path.isfile(path):
            parser.error(f"argument --merge/--missing-from: no file {path}")
    return args


def host_info():
    versions = {}
    for package in VERSIONS:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    try:
        gpu = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        gpu = None
    return dict(
        gpu=gpu or "none (CPU)",
        python=platform.python_version(),
        cpus=os.cpu_count(),
        versions=versions,
    )


def selected_rows(args):
    """The plan's rows for `--jobs`, `--rows` and `--missing-from`. A memory
    worker's rows run together (each builds on the probes before it)."""
    from _accelerator import plan
    from _accelerator import report

    workers = tuple(args.jobs.split(","))
    rows = plan.build(args.quick, workers, args.compile_at_quick)
    if args.rows:
        rows = [row for row in rows if re.search(args.rows, row.key)]
    if args.missing_from:
        with open(args.missing_from) as file:
            earlier = json.load(file)["results"]
        done = {report.row_key(r) for r in earlier if report.measured(r)}
        redo = {row.worker for row in rows if row.key not in done}
        rows = [
            row
            for row in rows
            if row.key not in done or (WORKERS[row.worker][1] and row.worker in redo)
        ]
    return rows


def worker_environment(args, worker, dump_hlo=False):
    """The worker's backend, and the caches kept in `--workdir`. JAX takes
    the card's memory as it needs it, beside the other workers; the memory
    workers run alone and JAX takes 95% of it at once, as it does by
    default. With `dump_hlo` (profile rows selected) Keras-JAX dumps its
    training steps' HLO, and keeps a compilation cache of its own: a step
    found in the shared cache would be compiled, and dumped, nowhere."""
    backend, exclusive = WORKERS[worker]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    jax_cache = "jax"
    if dump_hlo and worker == "keras-jax":
        from _accelerator import kernel_sources

        dump = os.path.abspath(os.path.join(args.workdir, "xla-dump"))
        env["XLA_FLAGS"] = (
            f"{env.get('XLA_FLAGS', '')} {kernel_sources.dump_flags(dump)}"
        )
        jax_cache = "jax-hlo-dumped"
    env.update(
        JAX_COMPILATION_CACHE_DIR=os.path.abspath(
            os.path.join(args.workdir, jax_cache)
        ),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="1",
        TORCHINDUCTOR_CACHE_DIR=os.path.abspath(os.path.join(args.workdir, "inductor")),
    )
    if backend:
        env["KERAS_BACKEND"] = backend
        env["ACCELERATOR_KERNELS"] = args.kernels
    if exclusive:
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = "0.95"
    else:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


def check(args):
    """Runs the selected rows through the schedule; writes the report."""
    from _accelerator import pool as pool_module
    from _accelerator import report
    from _accelerator import schedule

    log_dir = os.path.join(args.workdir, "logs")
    shutil.rmtree(log_dir, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(log_dir)
    rows = selected_rows(args)
    expected = schedule.ExpectedSeconds.load(
        args.expected or schedule.EXPECTED_PATH, "quick" if args.quick else "full"
    )
    dump_hlo = any(row.section == "profile" for row in rows)
    results_path = os.path.join(args.out, "results.jsonl")
    open(results_path, "w").close()
    script = os.path.abspath(__file__)
    pool = pool_module.Pool(
        lambda worker: pool_module.worker_command(script, args, worker),
        args.out,
        lambda worker: worker_environment(args, worker, dump_hlo),
        log_dir,
    )
    collected = []

    def record(row, fields):
        result = {**dict(section=row.section, item=row.item, worker=row.worker)}
        result.update(fields, key=row.key)
        if "key" not in fields:  # the schedule's own row, not a worker's
            with open(results_path, "a") as file:
                file.write(json.dumps(result) + "\n")
        collected.append(result)
        print(f"{row.key:<62} {report.outcome(result)}", flush=True)

    start = time.time()
    total = sum(expected.row(row) for row in rows if not row.skip)
    print(
        f"== {len(rows)} rows, about {total:.0f} s of work, {args.budget_s:.0f} s budget"
    )
    try:
        schedule.run(rows, expected, start + args.budget_s, pool, record, time.time)
    except KeyboardInterrupt:
        print(f"interrupted after {len(collected)} of {len(rows)} rows; writing those")
    finally:
        pool.stop_all()
        pool_module.gather_logs(log_dir, os.path.join(args.out, "workers.log"))
    expected.save(os.path.join(args.out, "expected_seconds.json"))
    return finish(
        args.out,
        dict(host_info(), kernels=args.kernels),
        collected,
        time.time() - start,
    )


def finish(out, host, rows, seconds):
    from _accelerator import report

    text, failed = report.write(out, host, rows)
    print(text)
    outcome = f"{len(failed)} failed: {failed}" if failed else "every check passed"
    print(f"{len(rows)} results in {seconds:.0f} s; {outcome}")
    return 1 if failed else 0


def merge_runs(args):
    from _accelerator import report

    documents = []
    for path in args.merge:
        with open(path) as file:
            documents.append(json.load(file))
    host, rows = report.merge(documents)
    os.makedirs(args.out, exist_ok=True)
    return finish(args.out, host, rows, 0)


def dry_run(args):
    """The schedule on a clock that each row moves by its expected seconds."""
    from _accelerator import schedule

    rows = selected_rows(args)
    expected = schedule.ExpectedSeconds.load(
        args.expected or schedule.EXPECTED_PATH, "quick" if args.quick else "full"
    )
    pool = schedule.RehearsalPool(expected)

    def record(row, fields):
        outcome = fields.get("skipped") or f"runs, about {pool.last_s:.0f} s"
        print(f"{pool.clock():7.0f} s  {row.key:<62} {outcome}")

    schedule.run(rows, expected, args.budget_s, pool, record, pool.clock)
    print(f"ends at about {pool.clock():.0f} s of a {args.budget_s:.0f} s budget")
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        from _accelerator import worker

        results_path = os.path.join(args.out, "results.jsonl")
        return worker.serve(args.worker, args.quick, args.workdir, results_path)
    if args.merge:
        return merge_runs(args)
    if args.dry_run:
        return dry_run(args)
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
