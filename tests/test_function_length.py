"""No function in the library or the programs is longer than
MAX_FUNCTION_LINES lines (its `def` line to its last line, the docstring
not counted): a longer one does several things and should be split."""

import ast
import pathlib

import pytest

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECKED_TREES = ("keras_gmlp", "applications")
MAX_FUNCTION_LINES = 60


def function_length(node):
    """Lines of `node` from its `def` to its end, less its docstring."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        length -= first.end_lineno - first.lineno + 1
    return length


def long_functions(source, limit=MAX_FUNCTION_LINES):
    """(name, first line, length) of every function in `source`, nested
    ones and methods included, longer than `limit` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = function_length(node)
            if length > limit:
                found.append((node.name, node.lineno, length))
    return found


def test_the_counter_skips_the_docstring_and_counts_nested_functions():
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    docstring = '    """A docstring\n    on two lines."""\n'
    at_limit = f"def f():\n{docstring}{body}\n"
    assert long_functions(at_limit) == []
    one_over = f"def f():\n{docstring}{body}\n    return x0\n"
    assert long_functions(one_over) == [("f", 1, 61)]
    nested = (
        "class A:\n    def outer(self):\n        def inner():\n"
        + "\n".join(f"            y{i} = {i}" for i in range(70))
        + "\n        return inner\n"
    )
    assert [name for name, _, _ in long_functions(nested)] == ["outer", "inner"]


@pytest.mark.parametrize("tree", CHECKED_TREES)
def test_no_function_is_longer_than_the_limit(tree):
    offenders = []
    for path in sorted((ROOT / tree).rglob("*.py")):
        for name, line, length in long_functions(path.read_text(encoding="utf-8")):
            relative = path.relative_to(ROOT).as_posix()
            offenders.append(f"{relative}:{line} {name}() has {length} lines")
    assert not offenders, (
        f"functions longer than {MAX_FUNCTION_LINES} lines (split them):\n"
        + "\n".join(offenders)
    )
