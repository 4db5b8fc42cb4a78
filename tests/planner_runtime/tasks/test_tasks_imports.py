"""The tasks package imports one way: no module of it imports another that imports it back,
not even for type checking (declarations, then templates, then spec; loaders and checks on top)."""

from __future__ import annotations

import ast
from pathlib import Path

import planner_runtime.tasks as tasks

PACKAGE = "planner_runtime.tasks"


def _imports(path: Path) -> set[str]:
    """The package's own modules that ``path`` imports anywhere in it (inside functions and
    ``if TYPE_CHECKING:`` too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        found.update(n for n in names if n.startswith(PACKAGE + "."))
    return found


def test_no_module_of_the_tasks_package_is_in_an_import_cycle():
    graph = {f"{PACKAGE}.{p.stem}": _imports(p) for p in Path(tasks.__file__).parent.glob("*.py") if p.stem != "__init__"}
    assert f"{PACKAGE}.declarations" in graph and f"{PACKAGE}.spec" in graph

    def cycle_from(start: str) -> list[str] | None:
        path, todo = [start], [(start, iter(sorted(graph.get(start, ()))))]
        while todo:
            node, children = todo[-1]
            child = next(children, None)
            if child is None:
                todo.pop()
                path.pop()
            elif child == start:
                return path + [child]
            elif child not in path and child in graph:
                path.append(child)
                todo.append((child, iter(sorted(graph[child]))))
        return None

    cycles = [c for c in map(cycle_from, sorted(graph)) if c]
    assert not cycles, " / ".join(" -> ".join(c) for c in cycles)
