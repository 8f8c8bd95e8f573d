"""Every program answers --help from a bare checkout: `python -S` leaves out
site-packages, so neither keras_gmlp nor Keras can be imported."""

import pathlib
import subprocess
import sys

import pytest

APPLICATIONS = pathlib.Path(__file__).resolve().parents[3] / "applications"
PROGRAMS = sorted(path.name for path in APPLICATIONS.glob("[!_]*.py"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_answers_without_the_package_installed(program, tmp_path):
    result = subprocess.run(
        [sys.executable, "-S", str(APPLICATIONS / program), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--output-dir" in result.stdout
