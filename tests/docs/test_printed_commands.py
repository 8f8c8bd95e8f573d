"""Every command the documentation and the programs print runs as printed
after the README's set-up, which installs into `.venv` and never
activates it: so one convention, `.venv/bin/python SCRIPT` (or an entry
point of `.venv/bin`), no bare `python` or `python3` before a script of
this repository, each script present and each of its flags one its
`--help` lists. The programs' own hints (the rerun after Ctrl-C, how to
make a missing preset) name the Python that runs them.

Cheap: one `--help` per script (each parses its flags before importing
Keras), nothing trained.
"""

import functools
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The markdown and the sources whose text the site and the programs show.
SOURCES = (
    "README.md",
    "docs/**/*.md",
    "docs/hooks.py",
    "guides/*.py",
    "applications/*.py",
    "applications/_*/*.py",
    "benchmarks/README.md",
    "benchmarks/docs/*.md",
)
BARE_PYTHON = re.compile(r"(?<![\w./-])python3? (?:applications|guides|benchmarks)/")
SCRIPT_COMMAND = re.compile(
    r"\.venv/bin/python ((?:applications|guides|benchmarks)/\S+\.py)(.*)"
)
ENTRY_POINT = re.compile(r"\.venv/bin/(?!python)([\w-]+)")


def source_files():
    return sorted({path for pattern in SOURCES for path in ROOT.glob(pattern)})


def logical_lines(text):
    """Lines with backslash continuations joined (shell, and docstrings'
    escaped `\\\\`)."""
    return re.sub(r"\\\\?\n\s*", " ", text).splitlines()


def printed_commands():
    """(file, script, flags) for every `.venv/bin/python SCRIPT ...`."""
    commands = []
    for path in source_files():
        for line in logical_lines(path.read_text(encoding="utf-8")):
            for script, rest in SCRIPT_COMMAND.findall(line):
                rest = rest.split("#")[0].split("`")[0]
                flags = re.findall(r"(?<![\w-])--[a-z][\w-]*", rest)
                commands.append((path.relative_to(ROOT).as_posix(), script, flags))
    return commands


@functools.cache
def help_flags(script):
    result = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert result.returncode == 0, (script, result.stderr[-1000:])
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", result.stdout))


def test_no_bare_python_before_a_script():
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in source_files()
        for line in path.read_text(encoding="utf-8").splitlines()
        if BARE_PYTHON.search(line)
    ]
    assert not found, "\n".join(found)


def test_every_printed_script_exists_and_takes_its_flags():
    commands = printed_commands()
    scripts = {script for _, script, _ in commands}
    # The programs, the guides and the benchmarks are all named somewhere.
    assert {"applications/train_image_classifier.py"} <= scripts
    assert any(script.startswith("guides/") for script in scripts)
    assert any(script.startswith("benchmarks/") for script in scripts)
    wrong = []
    for where, script, flags in commands:
        if "NAME" in script:  # `guides/NAME.py`: a placeholder
            continue
        if not (ROOT / script).is_file():
            wrong.append(f"{where}: {script} does not exist")
        elif flags:
            unknown = set(flags) - help_flags(script)
            if unknown:
                wrong.append(f"{where}: {script} has no {sorted(unknown)}")
    assert not wrong, "\n".join(wrong)


def test_every_printed_entry_point_is_installed():
    """`.venv/bin/hf` (huggingface-hub, a dependency), `.venv/bin/mkdocs`
    (the `docs` extra): console scripts of installed distributions."""
    names = {
        name
        for path in source_files()
        for name in ENTRY_POINT.findall(path.read_text(encoding="utf-8"))
    }
    assert "hf" in names
    installed = {
        point.name for point in importlib.metadata.entry_points(group="console_scripts")
    }
    if "mkdocs" not in installed:
        names.discard("mkdocs")  # the `docs` extra is not installed here
    assert names <= installed | {"pip"}, names - installed


def test_the_programs_hints_name_this_python(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "applications"))
    try:
        from _shared.commands import python_command
    finally:
        sys.path.remove(str(ROOT / "applications"))
    monkeypatch.chdir(tmp_path)
    python, script, flag = python_command("applications/x.py", "--a b").split(" ", 2)
    assert os.path.samefile(python, sys.executable)
    assert (script, flag) == ("applications/x.py", "'--a b'")
