"""The documentation site as a person sees it: Debian's Chromium, headless,
opens the built home page, one API page and one guide from a local HTTP
server, and the rendered page has the site's title, its navigation, a code
block and no error; the guide shows a cell's printed output and a figure
the server serves as a PNG.

The site is built by `.ci/run` (`mkdocs build --strict`), which runs this
with DOCS_SITE set to the built folder; without it, or without Chromium,
the test skips and says why."""

import contextlib
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

# Nothing here depends on KERAS_BACKEND.
pytestmark = pytest.mark.backend_independent

SITE = os.environ.get("DOCS_SITE")
# A guide that prints and draws (docs/guides/getting_started/render.json).
GUIDE = "guides/getting_started/"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("Chromium is not installed (.ci/run installs Debian's `chromium`)")


@contextlib.contextmanager
def served(folder):
    """`python -m http.server` on a free local port, serving `folder`."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=0.1),
            ):
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def rendered(browser, url, profile):
    """The page's DOM after Chromium has loaded and run it."""
    result = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def visible_text(dom):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    if not SITE or not (pathlib.Path(SITE) / "index.html").is_file():
        pytest.skip("DOCS_SITE is not a built site (.ci/run builds it with mkdocs)")
    browser = chromium()
    profile = tmp_path_factory.mktemp("chromium-profile")
    with served(SITE) as root:
        pages = {
            page: rendered(browser, f"{root}/{page}", profile)
            for page in ("", "api/layers/", GUIDE)
        }
        figures = re.findall(r'<img[^>]*class="guide-figure"[^>]*>', pages[GUIDE])
        sources = [re.search(r'src="([^"]+)"', tag).group(1) for tag in figures]
        pages["figures"] = [
            urllib.request.urlopen(f"{root}/{GUIDE}{source}", timeout=10).read()
            for source in sources
        ]
        return pages


@pytest.mark.parametrize("page", ["", "api/layers/", GUIDE])
def test_a_page_shows_title_navigation_and_code(pages, page):
    dom = pages[page]
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "keras-gmlp" in title
    text = visible_text(dom)
    for entry in ("Installation", "Programs", "Guides", "API reference"):
        assert entry in text, entry
    assert re.search(r"<pre[^>]*>.*?<code", dom, re.S), "no code block"
    assert "404" not in title and "Page not found" not in text


def test_the_api_page_documents_the_layers(pages):
    text = visible_text(pages["api/layers/"])
    for name in ("gMLPBlock", "SpatialGatingUnit", "TinyAttention", "Parameters"):
        assert name in text, name


def test_the_guide_shows_what_its_cells_printed_and_drew(pages):
    dom = pages[GUIDE]
    outputs = re.findall(
        r'<div class="guide-output[^"]*">\s*<pre[^>]*>(.*?)</pre>', dom, re.S
    )
    assert outputs, "no output block"
    assert any("Test accuracy:" in visible_text(block) for block in outputs)
    # Each output follows the code block of the cell that printed it.
    for match in re.finditer(r'<div class="guide-output', dom):
        assert dom[: match.start()].rstrip().endswith("</code></pre></div>")
    assert pages["figures"], "no figure"
    assert all(png.startswith(b"\x89PNG") for png in pages["figures"])
