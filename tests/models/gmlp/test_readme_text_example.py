"""Runs the README's text example exactly as written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def text_example():
    readme = README.read_text()
    section = readme[readme.index("## Text: masked LM and classifier") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_readme_text_example(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(text_example(), "README.md", "exec"), {"__name__": "readme"})
    assert (tmp_path / "amlp_tiny" / "config.json").exists()
    assert (tmp_path / "amlp_tiny" / "assets" / "tokenizer" / "vocabulary.txt").exists()
