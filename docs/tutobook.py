"""Tutobooks (keras.io's guide format) and their rendered outputs.

A guide in guides/ is a Python script whose top-level strings are its text
cells; the code between two of them is a code cell. docs/render_guides.py
runs a guide cell by cell and writes what each cell printed, and the
figures it drew, to docs/guides/NAME/render.json (figures as PNGs beside
it); docs/hooks.py puts them under their cells on the guide's page.

Plain Python (no mkdocs), so the render script and the tests use it too.
"""

import ast
import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
RENDERS = ROOT / "docs" / "guides"


def cells(source):
    """The tutobook's cells in order: `("text", string, line)` for each
    top-level string, `("code", code, line)` for the code between them
    (code cells with nothing but blank lines are left out); `line` is the
    cell's first line, counted from 1."""
    lines = source.splitlines()
    found, start = [], 0
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found += _code_cell(lines, start, node.lineno - 1)
            found.append(("text", node.value.value, node.lineno))
            start = node.end_lineno
    return found + _code_cell(lines, start, len(lines))


def _code_cell(lines, start, end):
    chunk = lines[start:end]
    while chunk and not chunk[0].strip():
        chunk, start = chunk[1:], start + 1
    code = "\n".join(chunk).rstrip()
    return [("code", code, start + 1)] if code else []


def source_hash(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def render_path(guide):
    return RENDERS / pathlib.Path(guide).stem / "render.json"


def load_render(guide):
    """The guide's rendered outputs, or None when it has not been rendered."""
    path = render_path(guide)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def render_problems(guide, render):
    """Why `render` (load_render's value) does not belong to `guide` as it
    is now: an empty list when it does."""
    name = pathlib.Path(guide).name
    command = f"nice -n 10 .venv/bin/python docs/render_guides.py {name}"
    if render is None:
        return [f"{name} has not been rendered: run `{command}`"]
    if render["source_sha256"] != source_hash(guide):
        return [f"{name} changed since its outputs were rendered: run `{command}`"]
    code = [c for c in cells(pathlib.Path(guide).read_text("utf-8")) if c[0] == "code"]
    if len(render["cells"]) != len(code):
        return [f"{name}: {len(code)} code cells, {len(render['cells'])} rendered"]
    folder = render_path(guide).parent
    return [
        f"{name}: the figure {figure} is missing from {folder}"
        for cell in render["cells"]
        for figure in cell["figures"]
        if not (folder / figure).is_file()
    ]


def output_markdown(cell, stem):
    """One code cell's rendered output as Markdown: its printed text in a
    text block (class `guide-output`), then its figures, which lie in
    docs/guides/STEM/ beside the page guides/STEM.md."""
    parts = []
    if cell["output"].strip():
        text = cell["output"].rstrip("\n").replace("```", "'''")
        parts.append(f"```{{.text .guide-output}}\n{text}\n```")
    parts += [
        f"![{figure} (drawn by the cell above)]({stem}/{figure}){{ .guide-figure }}"
        for figure in cell["figures"]
    ]
    return "\n\n".join(parts)


BACKENDS = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def render_note(render):
    """The line above a guide's first output: how the outputs were made."""
    mode = (
        "in its fast mode (`KERAS_GMLP_GUIDE_FAST=1`: less data, smaller "
        "models and shorter training than the full run)"
        if render["fast"]
        else "with its full settings"
    )
    return (
        "The outputs under the code cells are the guide's own, from a run on "
        f"{BACKENDS[render['backend']]} {mode}, recorded by "
        "`docs/render_guides.py`."
    )
