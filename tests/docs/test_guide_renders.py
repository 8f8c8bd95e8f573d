"""The guides' pages show what each code cell printed and drew, from a
render that is current: docs/render_guides.py ran the guide as it is now
(docs/guides/NAME/render.json holds the guide's SHA-256), and the page
docs/hooks.py makes puts each cell's output block and figures under it.

Cheap: no guide runs here; a guide's page is made from its files.
"""

import importlib.util
import json
import logging
import pathlib
import re
import shutil
import sys

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = sorted((ROOT / "guides").glob("*.py"))
OUTPUT_BLOCK = re.compile(r"```\{\.text \.guide-output\}\n(.*?)\n```", re.S)


def load(name):
    """docs/NAME.py as a module, as mkdocs loads the hooks (their folder on
    sys.path, so `import tutobook` finds docs/tutobook.py)."""
    sys.path.insert(0, str(DOCS))
    try:
        spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(DOCS))
    return module


tutobook = load("tutobook")


@pytest.mark.parametrize("guide", GUIDES, ids=[p.name for p in GUIDES])
def test_the_render_is_the_guide_as_it_is(guide):
    render = tutobook.load_render(guide)
    assert tutobook.render_problems(guide, render) == []
    assert render["guide"] == guide.name
    # Paths as a reader's: the checkout relative, `.venv`, /tmp.
    for cell in render["cells"]:
        assert str(ROOT) not in cell["output"] and "render-guide-" not in cell["output"]


def test_a_changed_guide_makes_its_render_stale(tmp_path):
    guide = ROOT / "guides" / "getting_started.py"
    changed = tmp_path / guide.name
    changed.write_text(guide.read_text() + "\nprint('one more cell')\n")
    problems = tutobook.render_problems(changed, tutobook.load_render(guide))
    assert len(problems) == 1 and "changed since" in problems[0], problems
    assert "docs/render_guides.py getting_started.py" in problems[0]


def test_a_missing_figure_is_a_problem(tmp_path, monkeypatch):
    guide = ROOT / "guides" / "getting_started.py"
    copy = tmp_path / "getting_started"
    shutil.copytree(tutobook.render_path(guide).parent, copy)
    drawn = [
        f for cell in tutobook.load_render(guide)["cells"] for f in cell["figures"]
    ]
    (copy / drawn[0]).unlink()
    monkeypatch.setattr(tutobook, "RENDERS", tmp_path)
    problems = tutobook.render_problems(guide, tutobook.load_render(guide))
    assert problems == [
        f"getting_started.py: the figure {drawn[0]} is missing from {copy}"
    ]


@pytest.fixture(scope="module")
def hooks():
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed")
    return load("hooks")


@pytest.mark.parametrize("guide", GUIDES, ids=[p.name for p in GUIDES])
def test_the_page_shows_each_output_under_its_cell(hooks, guide):
    page = hooks.tutobook_markdown(guide)
    render = tutobook.load_render(guide)
    code = [c for c in tutobook.cells(guide.read_text()) if c[0] == "code"]
    position = 0
    for (_, source, _), cell in zip(code, render["cells"], strict=True):
        block = f"```python\n{source}\n```"
        position = page.index(block, position) + len(block)
        # What lies between this code block and the next one.
        after = page[position:].split("```python\n", 1)[0]
        printed = [m.group(1) for m in OUTPUT_BLOCK.finditer(after)]
        expected = cell["output"].rstrip("\n").replace("```", "'''")
        assert printed == ([expected] if cell["output"].strip() else []), block
        for figure in cell["figures"]:
            assert f"]({guide.stem}/{figure})" in after, figure
    assert sum(len(c["figures"]) for c in render["cells"]) == page.count(
        ".guide-figure"
    )


def test_a_stale_render_is_a_build_warning(hooks, tmp_path, caplog, monkeypatch):
    """A warning is an error under `mkdocs build --strict`."""
    guide = tmp_path / "getting_started.py"
    guide.write_text((ROOT / "guides" / guide.name).read_text() + "\nx = 1\n")
    render = json.loads(tutobook.render_path(ROOT / "guides" / guide.name).read_text())
    monkeypatch.setattr(hooks.tutobook, "load_render", lambda path: render)
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.keras_gmlp"):
        hooks.tutobook_markdown(guide)
    assert "changed since its outputs were rendered" in caplog.text
