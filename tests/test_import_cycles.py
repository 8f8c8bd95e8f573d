"""No import cycle among the modules of keras_gmlp/ and applications/.

Every module is parsed (not imported); each of its imports, module-level or
inside a function, is an edge to the module it names (`from a.b import c`
names module a.b.c where that file exists, else a.b). The programs'
modules are named as they import each other: applications/ is on their
`sys.path`, so applications/_shared/flags.py is `_shared.flags`. A cycle
means that neither module can be read, or changed, without the other.
"""

import ast
import collections
import pathlib

import pytest

from tests.test_import_direction import _resolve
from tests.test_import_direction import imported_names
from tests.test_import_direction import module_name

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parent.parent
# (folder whose modules are checked, the folder their names start from).
TREES = (("keras_gmlp", "."), ("applications", "applications"))


def _source_root_of(name, root):
    """The folder `name` is found from: keras_gmlp from the repository,
    the programs' packages from applications/."""
    top = name.split(".")[0]
    for _, base in TREES:
        folder = root / base
        if (folder / top).is_dir() or (folder / f"{top}.py").is_file():
            return folder
    return root


def import_graph(root):
    """{module: {imported module: first line}} over the checked trees,
    with only the edges between modules of those trees."""
    graph = {}
    for tree, base in TREES:
        source_root = root / base
        for path in sorted((root / tree).rglob("*.py")):
            module = module_name(path, source_root)
            parsed = ast.parse(path.read_text(encoding="utf-8"), str(path))
            names = imported_names(parsed, module, path.name == "__init__.py")
            edges = graph.setdefault(module, {})
            for name, line in names:
                target = _resolve(name, _source_root_of(name, root))
                if target != module:
                    edges.setdefault(target, line)
    return {
        module: {t: line for t, line in edges.items() if t in graph}
        for module, edges in graph.items()
    }


def reachable(graph, module):
    """The modules `module` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def shortest_cycle(graph, module, members):
    """The shortest path from `module` back to itself within `members`."""
    previous, queue = {}, collections.deque([module])
    while queue:
        current = queue.popleft()
        for target in sorted(graph[current]):
            if target == module:
                path = [current]
                while path[-1] != module:
                    path.append(previous[path[-1]])
                return path[::-1]
            if target in members and target not in previous:
                previous[target] = current
                queue.append(target)
    raise AssertionError(f"{module} is in no cycle")


def cycles(graph):
    """One cycle of each group of modules that import each other, as
    "a:line -> b:line -> a" (the line of each import), from the group's
    first module by name; the group's other members follow when the cycle
    does not pass through all of them."""
    found, placed = [], set()
    reach = {module: reachable(graph, module) for module in graph}
    for module in sorted(graph):
        if module in placed or module not in reach[module]:
            continue
        group = {m for m in reach[module] if module in reach[m]}
        placed |= group
        path = shortest_cycle(graph, module, group)
        steps = [f"{a}:{graph[a][b]}" for a, b in zip(path, path[1:] + [module])]
        text = " -> ".join(steps + [module])
        others = sorted(group - set(path))
        if others:
            text += f" (also in the group: {', '.join(others)})"
        found.append(text)
    return found


def test_no_import_cycle_among_modules():
    found = cycles(import_graph(ROOT))
    assert not found, "import cycles (module:line of each import):\n" + "\n".join(found)


def _write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_check_finds_a_planted_cycle_through_a_function(tmp_path):
    """flags -> distribute (in a function) -> flags, as the programs' flags
    and distribution once were; files is imported by both, no cycle."""
    _write(tmp_path, "keras_gmlp/__init__.py", "")
    _write(tmp_path, "applications/_shared/__init__.py", "")
    _write(tmp_path, "applications/_shared/files.py", "import os\n")
    _write(
        tmp_path,
        "applications/_shared/flags.py",
        "from . import files\n\n\ndef f():\n    from .distribute import g\n",
    )
    _write(
        tmp_path,
        "applications/_shared/distribute.py",
        "from _shared.files import x\nfrom _shared.flags import positive_int\n",
    )
    assert cycles(import_graph(tmp_path)) == [
        "_shared.distribute:2 -> _shared.flags:5 -> _shared.distribute"
    ]
