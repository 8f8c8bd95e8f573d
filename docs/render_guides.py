"""Runs guides cell by cell and records what each cell printed and drew.

    .venv/bin/python docs/render_guides.py getting_started.py [...]
    .venv/bin/python docs/render_guides.py --all --backend jax

Each guide runs in its own process (Keras fixes its backend at import), in
an empty scratch folder that is also its TMPDIR, so the folders a guide
writes to (`outputs/guides/NAME/`, temporary folders) are the ones this
script chose. Its code cells run in order in one namespace, as the script
would; a cell's stdout and stderr are captured together, and a PNG it
writes is one of its figures. The result lands in docs/guides/NAME/:
`render.json` (the guide's SHA-256, the backend, the mode, each code
cell's output and figure names) and the figures, which docs/hooks.py puts
under their cells. A stale render fails `mkdocs build --strict`.

By default the guides run in their fast mode (`KERAS_GMLP_GUIDE_FAST=1`),
which needs no network and a minute or two per guide on a CPU; `--full`
runs the full settings (hours on a CPU, and some guides download data).
"""

import argparse
import contextlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import tutobook

GUIDES = tutobook.ROOT / "guides"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("guides", nargs="*", help="file names in guides/")
    parser.add_argument("--all", action="store_true", help="every guide")
    parser.add_argument(
        "--backend",
        default="tensorflow",
        choices=["tensorflow", "jax", "torch"],
        help="KERAS_BACKEND for the runs (default: tensorflow, as CI's guides)",
    )
    parser.add_argument("--full", action="store_true", help="not the fast mode")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the worker's guide
    args = parser.parse_args(argv)
    known = sorted(p.name for p in GUIDES.glob("*.py"))
    names = known if args.all else args.guides
    unknown = [name for name in names if name not in known]
    if unknown or not (names or args.one):
        parser.error(f"guides: received {unknown or names}; allowed: {known}")
    args.guides = names
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.one:
        return render_one(GUIDES / args.one, args.backend, not args.full)
    failed = []
    for name in args.guides:
        start = time.monotonic()
        print(f"{name}: rendering on {args.backend} ...", flush=True)
        code = run_worker(name, args)
        print(f"{name}: exit {code} in {time.monotonic() - start:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print("Not rendered:", ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


def run_worker(name, args):
    """Renders `name` in a fresh process inside an empty scratch folder."""
    with tempfile.TemporaryDirectory(prefix="render-guide-") as scratch:
        env = dict(
            os.environ,
            KERAS_BACKEND=args.backend,
            MPLBACKEND="Agg",
            TMPDIR=scratch,
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(tutobook.ROOT), os.environ.get("PYTHONPATH")])
            ),
        )
        env.pop("KERAS_GMLP_GUIDE_FAST", None)
        if not args.full:
            env["KERAS_GMLP_GUIDE_FAST"] = "1"
        command = [sys.executable, os.path.abspath(__file__), "--one", name]
        command += ["--backend", args.backend] + (["--full"] if args.full else [])
        return subprocess.run(command, cwd=scratch, env=env).returncode


def render_one(guide, backend, fast):
    """Runs `guide`'s code cells here (the scratch folder) and writes its
    render; returns the exit status."""
    scratch = os.getcwd()
    namespace = {"__name__": "__main__", "__file__": str(guide)}
    source = guide.read_text(encoding="utf-8")
    rendered, figures, start = [], {}, time.monotonic()
    for kind, code, line in tutobook.cells(source):
        if kind != "code":
            continue
        before = pngs(scratch)
        output = io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            try:
                # Blank lines in front keep the guide's line numbers in
                # tracebacks.
                exec(compile("\n" * (line - 1) + code, str(guide), "exec"), namespace)
            except Exception:
                traceback.print_exc()
                failed = True
            else:
                failed = False
        text = as_a_reader_sees(output.getvalue(), scratch)
        if failed:
            print(text, file=sys.stderr)
            return 1
        drawn = [
            path for path, stamp in pngs(scratch).items() if before.get(path) != stamp
        ]
        for path in drawn:
            figures[path.name] = path
        names = [path.name for path in drawn]
        rendered.append({"line": line, "output": text, "figures": names})
    write_render(guide, backend, fast, rendered, figures, time.monotonic() - start)
    return 0


def as_a_reader_sees(text, scratch):
    """`text` with this machine's paths as a reader's: the scratch folder
    (the guide's TMPDIR) as /tmp, the checkout relative, the environment
    as the README's `.venv`."""
    text = text.replace(scratch, "/tmp")
    text = text.replace(f"{tutobook.ROOT}{os.sep}", "")
    return text.replace(sys.prefix, ".venv")


def pngs(folder):
    """Every PNG under `folder`, with its modification time and size."""
    return {
        path: (path.stat().st_mtime_ns, path.stat().st_size)
        for path in pathlib.Path(folder).rglob("*.png")
    }


def write_render(guide, backend, fast, cells, figures, seconds):
    """Replaces docs/guides/NAME/ with the new render.json and figures."""
    target = tutobook.render_path(guide).parent
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, path in figures.items():
        shutil.copyfile(path, staging / name)
    render = {
        "guide": guide.name,
        "source_sha256": tutobook.source_hash(guide),
        "backend": backend,
        "fast": fast,
        "seconds": round(seconds),
        "cells": cells,
    }
    text = json.dumps(render, indent=1, ensure_ascii=False) + "\n"
    (staging / "render.json").write_text(text, encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    print(f"Wrote {target} ({len(figures)} figures)", file=sys.__stdout__)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("Interrupted: the guide's render was not written.")
