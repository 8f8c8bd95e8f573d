"""pyproject.toml's floors are the versions CI's floor lane installs.

.ci/floors.txt pins every direct dependency at its floor (`name==version`)
and CI runs the library's suite with it; a floor raised or lowered in one file
and not the other would leave the stated floor untested.
"""

import pathlib
import re
import tomllib

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*(.*)$")


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def stated_floors():
    """{name: floor} for every requirement of the package and its backend
    extras (keras-hub's too) that has a `>=` bound."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = project["dependencies"] + [
        requirement
        for extra in ("hub", "tensorflow", "jax", "torch")
        for requirement in extras[extra]
    ]
    floors = {}
    for requirement in requirements:
        name, specifier = REQUIREMENT.match(requirement).groups()
        bound = re.search(r">=\s*([0-9][^,;\s]*)", specifier)
        if bound:
            floors[canonical(name)] = bound.group(1)
    return floors


def pinned_floors():
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonical(name)] = version
    return pins


def release(version):
    """(major, minor, patch): "2.21" and "2.21.0" are the same floor."""
    parts = [int(part) for part in re.findall(r"\d+", version)[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def test_every_direct_dependency_has_a_floor():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [REQUIREMENT.match(r).group(1) for r in project["dependencies"]]
    assert sorted(map(canonical, names)) == sorted(
        name for name in stated_floors() if name in map(canonical, names)
    )


def test_floors_txt_pins_each_stated_floor():
    pins = pinned_floors()
    for name, floor in stated_floors().items():
        assert name in pins, f"{name}>={floor} is not in .ci/floors.txt"
        assert release(pins[name]) == release(floor), (name, floor, pins[name])
