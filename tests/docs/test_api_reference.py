"""The built API reference holds only the library's own words: no
docstring of Python's built-in types (a tuple constant documented by
inspection gets `tuple`'s), no class documented inside another class
(keras-hub's `backbone_cls` attributes nest a family into itself), no
private base (`keras.src...`), and `**kwargs` is never "required".

`.ci/run` builds the site and runs this with DOCS_SITE set to it; the
checks themselves are tried on planted pages, so they run everywhere.
"""

import builtins
import html
import os
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend_independent

SITE = os.environ.get("DOCS_SITE")
OBJECT = re.compile(r'<div class="doc doc-object doc-(\w+)">\s*<h\d id="([^"]+)"')
KWARGS_ROW = re.compile(
    r"<tr[^>]*>\s*<td>\s*<code>\*\*\w+</code>.*?</tr>", re.S | re.IGNORECASE
)


def builtin_docstrings():
    """The first line of every built-in type's docstring, as HTML shows it."""
    lines = set()
    for value in vars(builtins).values():
        if isinstance(value, type) and value.__doc__:
            first = value.__doc__.strip().splitlines()[0].strip()
            if len(first) > 20:
                lines.add(html.escape(first, quote=False))
    return lines


def problems(page):
    """What in one rendered API page is not the library's own."""
    found = [
        f"a built-in docstring: {line!r}"
        for line in builtin_docstrings()
        if line in page
    ]
    kinds = {path: kind for kind, path in OBJECT.findall(page)}
    for path in kinds:
        owner = path.rpartition(".")[0]
        if kinds[path] == "class" and kinds.get(owner) == "class":
            found.append(f"a class documented inside a class: {path}")
    found += [
        f"a private base: {base}"
        for base in re.findall(r"Bases:(.*?)</p>", page, re.S)
        if re.search(r"\b(keras|keras_hub)\.src\.|\._\w", base)
    ]
    found += [
        "**kwargs marked required"
        for row in KWARGS_ROW.findall(page)
        if "required" in row
    ]
    return found


def api_pages():
    if not SITE or not (pathlib.Path(SITE) / "api").is_dir():
        pytest.skip("DOCS_SITE is not a built site (.ci/run builds it with mkdocs)")
    return sorted((pathlib.Path(SITE) / "api").glob("*/index.html"))


def test_the_api_reference_holds_only_the_librarys_words():
    pages = api_pages()
    assert len(pages) >= 6
    found = {
        page.parent.name: problems(page.read_text(encoding="utf-8")) for page in pages
    }
    assert not any(found.values()), found


CLEAN = """
<div class="doc doc-object doc-class">
<h2 id="keras_gmlp.models.gMLPBackbone" class="doc doc-heading">gMLPBackbone</h2>
<p class="doc doc-class-bases">Bases: <code>keras_hub.models.Backbone</code></p>
<div class="doc doc-object doc-attribute">
<h3 id="keras_gmlp.models.gMLPBackbone.LORA_LAYER_NAMES" class="doc doc-heading">
LORA_LAYER_NAMES</h3><p>LoRA adapts the channel projections.</p></div>
<table><tr class="doc-section-item"><td><code>**kwargs</code></td><td></td>
<td>standard arguments</td><td><code>{}</code></td></tr></table>
</div>
"""


def test_a_clean_page_has_no_problems():
    assert problems(CLEAN) == []


@pytest.mark.parametrize(
    "planted, problem",
    [
        (
            CLEAN.replace(
                "LoRA adapts the channel projections.", html.escape(tuple.__doc__)
            ),
            "a built-in docstring",
        ),
        (
            CLEAN.replace(
                '<div class="doc doc-object doc-attribute">\n<h3 id="keras_gmlp.models.'
                'gMLPBackbone.LORA_LAYER_NAMES"',
                '<div class="doc doc-object doc-class">\n<h3 id="keras_gmlp.models.'
                'gMLPBackbone.preprocessor_cls"',
            ),
            "a class documented inside a class",
        ),
        (
            CLEAN.replace("keras_hub.models.Backbone", "keras.src.layers.layer.Layer"),
            "a private base",
        ),
        (
            CLEAN.replace("<code>{}</code>", "<em>required</em>"),
            "**kwargs marked required",
        ),
    ],
)
def test_a_planted_problem_is_found(planted, problem):
    assert [found for found in problems(planted) if found.startswith(problem)]
