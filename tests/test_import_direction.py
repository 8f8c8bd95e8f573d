"""Imports inside keras_gmlp point down the layers of the library.

    programs (applications/*.py) -> keras_gmlp.applications (builders)
        -> keras_gmlp.models -> keras_gmlp.utils -> keras_gmlp.layers

Every module is parsed (not imported) and each of its imports, module-level
or inside a function, is checked against the rules of its package; the
imports between packages must also form no cycle.
"""

import ast
import pathlib

import pytest

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "keras_gmlp"

# Which packages of keras_gmlp each package may import ("keras_gmlp" is the
# package's own __init__). A new top-level package or module needs a rule.
_EVERYTHING = {
    "keras_gmlp",
    "layers",
    "utils",
    "models",
    "distribution",
    "applications",
    "visualization",
    "host_memory",
    "_compat",
}
ALLOWED = {
    "layers": {"layers", "_compat"},
    "utils": {"layers", "utils", "_compat"},
    "models": {"models", "utils", "layers", "distribution", "_compat"},
    "distribution": {"distribution", "layers", "utils", "_compat"},
    "applications": _EVERYTHING,
    "visualization": {"visualization", "models", "utils", "layers", "_compat"},
    "host_memory": {"host_memory", "_compat"},
    "_compat": {"_compat"},
    "keras_gmlp": _EVERYTHING,
}
# Top-level folders of the repository that are not part of the library.
OUTSIDE_THE_LIBRARY = ("applications", "guides", "benchmarks", "tests")


def module_name(path, source_root):
    parts = list(path.relative_to(source_root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module):
    """`layers` for `keras_gmlp.layers.x`, `keras_gmlp` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _resolve(name, source_root):
    """`keras_gmlp.x.y` as far as it names a module or package on disk
    (`from keras_gmlp.x import y` names module y only if y exists)."""
    parts = name.split(".")
    while len(parts) > 1:
        path = source_root.joinpath(*parts)
        if path.is_dir() or path.with_suffix(".py").is_file():
            return ".".join(parts)
        parts.pop()
    return parts[0]


def _absolute(node, module, is_package):
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imported_names(tree, module, is_package):
    """Each `(imported module, line)` of a parsed module, anywhere in it."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, is_package)
            for alias in node.names:
                yield f"{source}.{alias.name}", node.lineno
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value, node.lineno


def library_imports(source_root):
    """`(module, line, imported module)` for every import of the library
    in itself or in the repository's other top-level folders."""
    found = []
    for path in sorted((source_root / PACKAGE).rglob("*.py")):
        module = module_name(path, source_root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for name, line in imported_names(tree, module, is_package):
            top = name.split(".")[0]
            if top == PACKAGE:
                found.append((module, line, _resolve(name, source_root)))
            elif top in OUTSIDE_THE_LIBRARY:
                found.append((module, line, name))
    return found


def upward_imports(source_root):
    """Messages for the imports that break the package rules."""
    problems = []
    for module, line, imported in library_imports(source_root):
        package = package_of(module)
        if package not in ALLOWED:
            problems.append(
                f"{module}: package {package!r} has no import rule; add one "
                "to ALLOWED in tests/test_import_direction.py"
            )
            continue
        if imported.split(".")[0] != PACKAGE:
            problems.append(
                f"{module}:{line} imports {imported}, outside the library "
                f"(rule: keras_gmlp never imports the repository's "
                f"{', '.join(OUTSIDE_THE_LIBRARY)} folders)"
            )
            continue
        target = package_of(imported)
        if target not in ALLOWED[package]:
            problems.append(
                f"{module}:{line} imports {imported} (rule: keras_gmlp."
                f"{package} may import only keras_gmlp."
                f"{{{', '.join(sorted(ALLOWED[package]))}}})"
            )
    return problems


def package_cycles(source_root):
    """Messages for cycles among the imports between packages."""
    edges = {}
    for module, line, imported in library_imports(source_root):
        source, target = package_of(module), package_of(imported)
        if imported.startswith(PACKAGE) and source != target:
            edges.setdefault(source, {}).setdefault(target, f"{module}:{line}")
    cycles = []

    def visit(package, path):
        for target in sorted(edges.get(package, {})):
            if target in path:
                cycle = path[path.index(target) :] + [target]
                if cycle[0] == min(cycle[:-1]):  # each cycle once
                    steps = ", ".join(
                        f"{a} -> {b} ({edges[a][b]})" for a, b in zip(cycle, cycle[1:])
                    )
                    cycles.append(f"import cycle between packages: {steps}")
            else:
                visit(target, path + [target])

    for package in sorted(edges):
        visit(package, [package])
    return sorted(set(cycles))


def test_no_module_imports_a_package_above_it():
    problems = upward_imports(ROOT)
    assert not problems, "\n".join(problems)


def test_no_import_cycle_between_packages():
    cycles = package_cycles(ROOT)
    assert not cycles, "\n".join(cycles)


def _write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def planted_tree(tmp_path):
    """A small keras_gmlp tree with one upward import in a function (layers
    -> models) and a cycle (models -> utils -> models)."""
    for package in ("layers", "utils", "models"):
        _write(tmp_path, f"{PACKAGE}/{package}/__init__.py", "")
    _write(
        tmp_path,
        f"{PACKAGE}/layers/block.py",
        "def f():\n    from keras_gmlp.models import backbone\n",
    )
    _write(tmp_path, f"{PACKAGE}/models/backbone.py", "from ..utils import timm\n")
    _write(tmp_path, f"{PACKAGE}/utils/timm.py", "import keras_gmlp.models.backbone\n")
    _write(
        tmp_path,
        f"{PACKAGE}/utils/fine.py",
        "import importlib\nfrom keras_gmlp.layers import block\n"
        "importlib.import_module('keras_gmlp.layers.block')\n",
    )
    return tmp_path


def test_the_checks_find_planted_upward_imports_and_cycles(planted_tree):
    problems = upward_imports(planted_tree)
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        "keras_gmlp.layers.block:2 imports keras_gmlp.models.backbone "
        "(rule: keras_gmlp.layers may import only keras_gmlp.{_compat, layers})"
    )
    assert problems[1].startswith(
        "keras_gmlp.utils.timm:1 imports keras_gmlp.models.backbone"
    )
    assert package_cycles(planted_tree) == [
        "import cycle between packages: "
        "layers -> models (keras_gmlp.layers.block:2), "
        "models -> utils (keras_gmlp.models.backbone:1), "
        "utils -> layers (keras_gmlp.utils.fine:2)",
        "import cycle between packages: "
        "models -> utils (keras_gmlp.models.backbone:1), "
        "utils -> models (keras_gmlp.utils.timm:1)",
    ]
