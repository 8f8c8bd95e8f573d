"""Build-time pages of the documentation site (mkdocs.yml's `hooks`).

One source per fact: the pages below are made from the repository's own
files when the site is built, never copied into docs/.

- guides/*.py (keras.io tutobooks) become pages: their text cells as
  Markdown, their code cells as Python blocks, each followed by what it
  printed and drew when docs/render_guides.py ran the guide (a render
  older than its guide is a warning, so an error under --strict);
- benchmarks/README.md and benchmarks/docs/*.md (with their figures) are
  served at the same relative paths, so their links hold;
- each program's page gets its module docstring and its `--help`;
- the API reference has one page per public package of keras_gmlp, with an
  entry for every public name (the package's `__all__`, or what its
  `__init__.py` imports). A public class or function whose docstring lacks
  `Args:` (when it takes arguments) or an example is a warning, which
  `mkdocs build --strict` makes an error.
"""

import ast
import inspect
import logging
import os
import pathlib
import re
import subprocess
import sys

import tutobook  # docs/tutobook.py: mkdocs puts the hooks' folder on sys.path
from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOG = logging.getLogger("mkdocs.plugins.keras_gmlp")
PROGRAMS = (
    "train_image_classifier",
    "pretrain_mlm",
    "finetune_text_classifier",
    "train_causal_lm",
    "tokenize_corpus",
)
API = ("layers", "models", "applications", "distribution", "visualization", "utils")
# keras_gmlp.utils has no __all__; its docstring names its public modules:
# checkpoint conversion from timm and preset file access.
UTILS = ("timm", "preset_files")
# The guides in the order a reader learns: the layers, images (from scratch,
# then pretrained), what the models learn, text, then deployment and scale.
GUIDE_ORDER = (
    "getting_started",
    "image_classification_from_scratch",
    "transfer_learning",
    "what_mlps_learn",
    "masked_language_modeling",
    "text_generation",
    "export_and_serving",
    "distributed_training",
)


def guide_paths():
    """guides/*.py, in GUIDE_ORDER; a guide missing from it is an error."""
    paths = {p.stem: p for p in ROOT.glob("guides/*.py")}
    if set(paths) != set(GUIDE_ORDER):
        raise ValueError(
            f"docs/hooks.py's GUIDE_ORDER lists {sorted(GUIDE_ORDER)}; "
            f"guides/ holds {sorted(paths)}"
        )
    return [paths[name] for name in GUIDE_ORDER]


def _title(path):
    """A guide's `Title:`, or a Markdown page's first heading."""
    text = path.read_text(encoding="utf-8")
    match = re.search(r"^Title: (.*)$", text, re.M) or re.search(
        r"^# (.*)$", text, re.M
    )
    return match.group(1).strip() if match else path.stem.replace("_", " ")


def on_config(config):
    """Adds the generated pages to the navigation."""
    guides = ["guides/index.md"] + [
        {_title(p): f"guides/{p.stem}.md"} for p in guide_paths()
    ]
    benchmarks = [{"Overview": "benchmarks/README.md"}] + [
        {_title(p): f"benchmarks/docs/{p.name}"}
        for p in sorted(ROOT.glob("benchmarks/docs/*.md"))
    ]
    api = [{f"keras_gmlp.{name}": f"api/{name}.md"} for name in API]
    for section in config.nav:
        key = next(iter(section))
        section[key] = {
            "Guides": guides,
            "Benchmarks": benchmarks,
            "API reference": api,
        }.get(key, section[key])
    return config


def on_files(files, config):
    """Adds the pages made from the repository's files."""
    pages = {
        f"guides/{p.stem}.md": tutobook_markdown(p) for p in ROOT.glob("guides/*.py")
    }
    pages["benchmarks/README.md"] = (ROOT / "benchmarks/README.md").read_text("utf-8")
    for path in ROOT.glob("benchmarks/docs/*.md"):
        pages[f"benchmarks/docs/{path.name}"] = path.read_text("utf-8")
    for name in API:
        pages[f"api/{name}.md"] = api_page(name)
    for uri, text in pages.items():
        files.append(File.generated(config, uri, content=text))
    for path in ROOT.glob("benchmarks/*.png"):
        files.append(
            File.generated(config, f"benchmarks/{path.name}", abs_src_path=str(path))
        )
    return files


def on_page_markdown(markdown, page, config, files):
    """A program's page: `{{ program NAME }}` becomes its docstring and help."""
    return re.sub(
        r"\{\{ program (\w+) \}\}", lambda m: program_text(m.group(1)), markdown
    )


def tutobook_markdown(path):
    """A tutobook as Markdown: the header as title and summary, each
    top-level string a text cell, the code between them Python blocks, each
    followed by what it printed and drew (docs/guides/NAME/render.json)."""
    render = tutobook.load_render(path)
    for problem in tutobook.render_problems(path, render):
        LOG.warning("guides/%s", problem)
    outputs = iter(render["cells"] if render else [])
    out = []
    for kind, text, _ in tutobook.cells(path.read_text(encoding="utf-8")):
        if kind == "text":
            out.append(_linked(_text_cell(text, not out, path.name)))
            if len(out) == 1 and render:
                out.append(tutobook.render_note(render))
            continue
        out.append(f"```python\n{text}\n```")
        cell = next(outputs, None)
        if cell is not None:
            out.append(tutobook.output_markdown(cell, path.stem))
    return "\n\n".join(part for part in out if part)


def _text_cell(text, first, name):
    if first and "Title:" in text:
        fields = dict(re.findall(r"^(\w[\w ]*): (.*)$", text, re.M))
        return (
            f"# {fields.get('Title', '')}\n\n{fields.get('Description', '')}\n\n"
            f"The guide runs as a script: `.venv/bin/python guides/{name}`."
        )
    return inspect.cleandoc(text)


def _linked(text):
    """`*Transfer learning*`, naming another guide by its title's start,
    as a link to that guide's page."""
    titles = {_title(p).lower(): p.stem for p in guide_paths()}

    def link(match):
        name = match.group(1)
        stems = [s for title, s in titles.items() if title.startswith(name.lower())]
        return f"[{name}]({stems[0]}.md)" if len(stems) == 1 else match.group(0)

    return re.sub(r"(?<![*\w])\*([A-Z][^*\n]+)\*(?![*\w])", link, text)


def program_text(name):
    """The program's module docstring, once, as Markdown (its paragraphs
    reflow with the page; its indented commands become shell blocks), and
    its `--help` without what the page already shows (the docstring is the
    help's description and epilog). Flags are parsed before Keras is
    imported, so `--help` is quick."""
    doc = ast.get_docstring(
        ast.parse((ROOT / "applications" / f"{name}.py").read_text())
    )
    summary, _, details = doc.partition("\n")
    env = dict(os.environ, COLUMNS="88")
    help_text = subprocess.run(
        [sys.executable, f"applications/{name}.py", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    flags = help_text.removesuffix(details.strip()).rstrip()
    flags = flags.replace(f"\n\n{summary.strip()}\n\n", "\n\n", 1)
    if flags == help_text or summary.strip() in flags:
        LOG.warning("%s --help: its docstring is no longer its help's text", name)
    return (
        f"{summary}\n\n{_docstring_markdown(details)}\n\n## Flags\n\n"
        f"```text\n{flags}\n```\n"
    )


def _docstring_markdown(text):
    """A program docstring's paragraphs as Markdown; a paragraph indented
    by four spaces (the commands) as a shell block."""
    blocks = []
    for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        lines = paragraph.splitlines()
        if all(line.startswith("    ") for line in lines):
            code = "\n".join(line[4:] for line in lines)
            blocks.append(f"```bash\n{code}\n```")
        else:
            blocks.append(paragraph)
    return "\n\n".join(blocks)


def public_names(package):
    """`keras_gmlp.<package>`'s public names, read from its __init__.py."""
    if package == "utils":
        return [f"utils.{module}" for module in UTILS]
    tree = ast.parse((ROOT / "keras_gmlp" / package / "__init__.py").read_text())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and getattr(node.targets[0], "id", "") == "__all__"
        ):
            return [element.value for element in node.value.elts]
    return [
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if not (alias.asname or alias.name).startswith("_")
    ]


def api_page(package):
    """One mkdocstrings entry per public name, after the package's summary."""
    entries = [
        f"::: keras_gmlp.{package}\n    options:\n      members: false\n"
        "      show_root_heading: false"
    ]
    for name in public_names(package):
        entries.append(
            f"::: keras_gmlp.{package}.{name}"
            if "." not in name
            else f"::: keras_gmlp.{name}"
        )
    return f"# keras_gmlp.{package}\n\n" + "\n\n".join(entries) + "\n"


def on_pre_build(config):
    """Warns about a public name without `Args:` or an example."""
    import griffe

    for package in API:
        module = griffe.load(
            f"keras_gmlp.{package}",
            search_paths=[str(ROOT), *sys.path],
            force_inspection=True,
            resolve_aliases=True,
            resolve_external=False,
        )
        for name in public_names(package):
            target = module
            for part in name.split(".")[1:] if package == "utils" else [name]:
                target = target[part]
            for obj in _documented(target):
                _check_docstring(obj)


def _documented(obj):
    obj = obj.final_target if obj.is_alias else obj
    if obj.is_module:
        return [
            m
            for n, m in obj.members.items()
            if not n.startswith("_")
            and not m.is_alias
            and (m.is_class or m.is_function)
        ]
    return [obj]


def _check_docstring(obj):
    text = obj.docstring.value if obj.docstring else ""
    if not (obj.is_class or obj.is_function):
        if not text:
            LOG.warning("%s: it has no docstring", obj.path)
        return
    takes = obj.parameters if obj.is_function else None
    if obj.is_class:
        init = obj.members.get("__init__")
        takes = init.parameters if init is not None and init.is_function else []
    args = [p for p in (takes or []) if p.name not in ("self", "cls")]
    if args and "Args:" not in text:
        LOG.warning("%s: its docstring has no 'Args:'", obj.path)
    if "Example" not in text:
        LOG.warning(
            "%s: its docstring has no example ('Example:' or 'Examples:')", obj.path
        )
