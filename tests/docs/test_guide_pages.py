"""The guides as the site lists them: the index names every guide, in the
order of the navigation (docs/hooks.py's GUIDE_ORDER, the order a reader
learns in), and a guide that names another by its title links to it."""

import ast
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[2]


def guide_order():
    """GUIDE_ORDER, read without importing the hooks (they import mkdocs)."""
    tree = ast.parse((ROOT / "docs" / "hooks.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "GUIDE_ORDER":
            return list(ast.literal_eval(node.value))
    raise AssertionError("docs/hooks.py has no GUIDE_ORDER")


def test_the_navigation_orders_every_guide():
    assert sorted(guide_order()) == sorted(p.stem for p in ROOT.glob("guides/*.py"))


def test_the_guides_index_lists_every_guide_in_order():
    index = (ROOT / "docs" / "guides" / "index.md").read_text(encoding="utf-8")
    linked = re.findall(r"^\| \[\w+\.py\]\((\w+)\.md\)", index, re.M)
    assert linked == guide_order()


def test_a_guide_named_in_italics_is_a_guide():
    """`*Transfer learning*` in a guide's text becomes a link (docs/hooks.py
    links a title's start): each such name must start exactly one title."""
    titles = [
        re.search(r"^Title: (.*)$", p.read_text(encoding="utf-8"), re.M).group(1)
        for p in ROOT.glob("guides/*.py")
    ]
    for path in ROOT.glob("guides/*.py"):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"[Ss]ee \*([A-Z][^*\n]+)\*", text):
            starts = [t for t in titles if t.lower().startswith(name.lower())]
            assert len(starts) == 1, (path.name, name, starts)
