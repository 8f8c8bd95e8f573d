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
which writes `accelerator.json` and `accelerator.txt` to `--out` ($OUT
there). Each framework runs in its own process, one after another; the
whole run keeps inside `--budget-s` (420 s), giving each process a share
and skipping, with the reason recorded, what its share leaves no time for.

    python benchmarks/accelerator.py --quick    # the same code on a CPU, tiny sizes

`--quick` takes a minute on a CPU; without timm its parity check reads the
shipped timm fixture (tests/fixtures). `bash benchmarks/_accelerator/rehearse.sh`
runs the GPU host's command in a virtual environment of its versions.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time

from _flags import FlagParser

# (name, worker module, Keras backend, share of the budget), run in order:
# a process that ends early leaves its time to the next.
JOBS = [
    ("peers", "peers", None, 0.30),
    ("keras-jax", "keras", "jax", 0.25),
    ("keras-torch", "keras", "torch", 0.25),
    ("memory-jax", "memory", "jax", 0.10),
    ("memory-torch", "memory", "torch", 0.10),
]
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
GRACE_S = 60


def parse_args(argv=None):
    parser = FlagParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument(
        "--out",
        default=os.path.join("outputs", "accelerator"),
        help="folder for accelerator.json and accelerator.txt",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a CPU")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="seconds for the whole run (default 420)",
    )
    parser.add_argument(
        "--jobs",
        default=",".join(job[0] for job in JOBS),
        help="comma-separated processes to run, in order (default all)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    known = [job[0] for job in JOBS]
    unknown = sorted(set(args.jobs.split(",")) - set(known))
    if unknown:
        parser.error(f"argument --jobs: unknown {unknown}; allowed: {known}")
    if args.budget_s <= 0:
        parser.error(f"argument --budget-s: must be positive, received {args.budget_s}")
    return args


def run_worker(args):
    """One process: the worker named `--worker`, recording to `--out`."""
    from _accelerator.record import Results

    name, module = args.worker, dict((job[0], job[1]) for job in JOBS)[args.worker]
    results = Results(os.path.join(args.out, "results.jsonl"), name, args.deadline)
    workdir = os.path.join(args.out, "reference")
    if module == "peers":
        from _accelerator import peers

        peers.run(results, args.quick, workdir)
    elif module == "keras":
        from _accelerator import keras_checks
        from _accelerator import keras_speed

        keras_checks.run(results, args.quick, workdir)
        keras_speed.run(results, args.quick, workdir)
    else:
        from _accelerator import memory

        memory.run(results, args.quick, workdir)


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


def run_job(args, job, deadline, results_path):
    """Runs one worker process; a crash or a hang past its deadline is
    recorded as an error row, and the next job runs."""
    name, _, backend, _ = job
    env = dict(
        os.environ, TF_CPP_MIN_LOG_LEVEL="3", XLA_PYTHON_CLIENT_MEM_FRACTION="0.95"
    )
    if backend:
        env["KERAS_BACKEND"] = backend
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        name,
        "--out",
        args.out,
        "--deadline",
        str(deadline),
    ]
    if args.quick:
        command.append("--quick")
    log = os.path.join(args.out, f"{name}.log")
    print(f"== {name} ({deadline - time.time():.0f} s)", flush=True)
    with open(log, "w") as output:
        try:
            code = subprocess.run(
                command,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=max(1, deadline - time.time() + GRACE_S),
            ).returncode
        except subprocess.TimeoutExpired:
            code = "timed out"
    if code != 0:
        row = dict(
            section="worker", item=name, worker=name, error=f"exit {code}; see {log}"
        )
        with open(results_path, "a") as file:
            file.write(json.dumps(row) + "\n")


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    from _accelerator import report

    os.makedirs(os.path.join(args.out, "reference"), exist_ok=True)
    results_path = os.path.join(args.out, "results.jsonl")
    open(results_path, "w").close()
    start, share = time.time(), 0.0
    selected = args.jobs.split(",")
    total_share = sum(job[3] for job in JOBS if job[0] in selected)
    for job in JOBS:
        if job[0] in selected:
            share += job[3] / total_share
            run_job(args, job, start + share * args.budget_s, results_path)
    with open(results_path) as file:
        rows = [json.loads(line) for line in file if line.strip()]
    text, failed = report.write(args.out, host_info(), rows)
    print(text)
    print(
        f"{len(rows)} results in {time.time() - start:.0f} s; {len(failed)} failed: {failed}"
        if failed
        else f"{len(rows)} results in {time.time() - start:.0f} s; every check passed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
