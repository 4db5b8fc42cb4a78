"""The layers point one way: every import in planner_runtime and device_farm, read with ``ast``.

Imports at module level, inside functions and under ``if TYPE_CHECKING:`` count alike: a deferred
or type-only import is still a dependency, and a cycle hidden behind one is still a cycle between
the modules (it only moves the failure from import time to whoever reads the code). A registry's
``"package.module:attr"`` string names a dependency too: it counts for the layer rules, not for
cycles (a registry naming its entries is the point of one). Three checks: (a) no import cycle
between modules, (b) no arrow from a lower layer up (:data:`RULES`), (c) no module over
:data:`MAX_LINES` lines. A failure names the modules and the import line, ``module:line: statement``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("planner_runtime", "device_farm")
MAX_LINES = 400
# Modules that read better whole, with the reason; keep this short.
LONG_MODULES: dict[str, str] = {}

_P = "planner_runtime."
BOTTOM = ("contract", "errors", "config", "deadline", "sqlite_file", "asgi_thread")
# Everything directly under planner_runtime that is not the bottom layer.
ABOVE_BOTTOM = tuple(sorted(_P + (p.stem if p.suffix else p.name) for p in (ROOT / "planner_runtime").iterdir()
                            if (p.suffix == ".py" and p.stem not in (*BOTTOM, "__init__")) or (p / "__init__.py").is_file()))
# (importer prefix, imported prefixes it must never reach, why). A prefix is a module or a package.
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("device_farm", ("planner_runtime",), "device_farm is usable without the runtime"),
    ("device_farm.virtual.os", ("device_farm.virtual.apps",), "the virtual phone's system never imports app code"),
    ("device_farm.virtual.ui", ("device_farm.virtual.os", "device_farm.virtual.apps"),
     "widgets sit below both the system and the apps"),
    *((_P + m, ABOVE_BOTTOM, "the bottom layer imports only the bottom layer") for m in BOTTOM),
    (_P + "planners", tuple(_P + p for p in ("serving", "harness", "runs", "cli", "training", "data")),
     "a planner turns messages into a tool call and knows nothing above it"),
    (_P + "serving", (_P + "cli", _P + "runs", _P + "harness"), "serving imports planners and is wired by cli"),
    (_P + "harness", tuple(_P + p for p in ("runs", "cli", "serving", "trajectories.store")),
     "an episode writes through a sink, runs and cli drive it"),
    (_P + "tasks", (_P + "runs", _P + "cli", _P + "serving"), "tasks sit below runs"),
    (_P + "trajectories", tuple(_P + p for p in ("runs", "cli", "serving", "training")),
     "the store is read by runs and training, not the reverse"),
    (_P + "training", (_P + "harness", _P + "cli", _P + "serving"),
     "training reads trajectories and calls runs, never harness internals"),
    (_P + "data", (_P + "runs", _P + "cli", _P + "serving", _P + "training"), "data reads trajectories"),
    (_P + "runs", (_P + "cli",), "only cli wires everything"),
    ("planner_runtime", (_P + "cli",), "only cli wires everything"),
)


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (the nearest one that exists in the tree)
    line: int
    text: str
    how: str = ""  # "under TYPE_CHECKING", "by name" (a registry string), or "" for a plain import

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.text}" + (f"  ({self.how})" if self.how else "")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _nearest(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


_BY_NAME = re.compile(r"((?:planner_runtime|device_farm)(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?")


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports() -> list[Import]:
    """Every import of a module of this tree by another, as written."""
    modules = _modules()
    found = []
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        lines = source.splitlines()
        type_only = _type_checking_lines(tree)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (named := _BY_NAME.fullmatch(node.value)):
                if named[1] in modules and named[1] != module:
                    found.append(Import(module, named[1], node.lineno, lines[node.lineno - 1].strip(), "by name"))
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # `from pkg import name`: the submodule pkg.name when there is one, else pkg itself.
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for name in dict.fromkeys(names):
                target = _nearest(name, modules) if name.split(".")[0] in PACKAGES else None
                if target and target != module:
                    how = "under TYPE_CHECKING" if node.lineno in type_only else ""
                    found.append(Import(module, target, node.lineno, lines[node.lineno - 1].strip(), how))
    return found


def _within(module: str, prefix: str) -> bool:
    prefix = prefix.rstrip(".")
    return module == prefix or module.startswith(prefix + ".")


def _cycles(edges: list[Import]) -> list[tuple[list[str], list[Import]]]:
    """Each strongly connected group of modules (Tarjan), with one loop in it as the imports that close it."""
    graph: dict[str, dict[str, Import]] = {}
    for edge in edges:
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [(sorted(group), _one_loop(min(group), group, graph)) for group in sorted(groups, key=min)]


def _one_loop(start: str, group: set[str], graph: dict[str, dict[str, Import]]) -> list[Import]:
    """The shortest way from ``start`` back to itself inside ``group`` (breadth first)."""
    paths: dict[str, list[Import]] = {start: []}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt, edge in sorted(graph.get(node, {}).items()):
                if nxt == start:
                    return [*paths[node], edge]
                if nxt in group and nxt not in paths:
                    paths[nxt] = [*paths[node], edge]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no loop through {start}")


def _upward(edge: Import) -> str | None:
    """Why ``edge`` points up a layer, as the line to print; None when it may exist."""
    for importer, forbidden, why in RULES:
        # Inside one forbidden package (cli importing cli) nothing is up.
        if _within(edge.source, importer) and any(_within(edge.target, f) and not _within(edge.source, f) for f in forbidden):
            return f"{edge}  ({edge.target} is above {edge.source}: {why})"
    return None


def violations() -> dict[str, list[str]]:
    """What each check finds, as lines to print: ``{"cycles": [...], "upward": [...], "long": [...]}``."""
    edges = imports()
    cycles = [" -> ".join(e.source for e in loop) + f" -> {loop[0].source}"
              + (f"\n      (one loop of {len(group)} modules importing each other: {', '.join(group)})" if len(group) > len(loop) else "")
              + "".join(f"\n      {e}" for e in loop)
              for group, loop in _cycles([e for e in edges if e.how != "by name"])]
    upward = [problem for edge in edges if (problem := _upward(edge))]
    long = []
    for module, path in _modules().items():
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_LINES and path.relative_to(ROOT).as_posix() not in LONG_MODULES:
            long.append(f"{path.relative_to(ROOT).as_posix()}: {count} lines")
    return {"cycles": cycles, "upward": upward, "long": sorted(long)}


def test_the_walk_sees_module_and_function_level_imports():
    edges = imports()
    assert len({e.source for e in edges}) > 100
    # A deferred import inside a function (cli/tasks.py loads the skills module on demand) is seen too.
    assert any(e.source == "planner_runtime.cli.tasks" and e.target == "planner_runtime.harness.skills" for e in edges)
    assert all(e.target in _modules() for e in edges)
    # So is a registry's "module:attr" string (planners/__init__ names its backends so).
    assert any(e.source == "planner_runtime.planners" and e.how == "by name" for e in edges)


def test_the_rules_and_the_cycle_search_catch_what_they_are_for():
    def edge(source: str, target: str) -> Import:
        return Import(source, target, 1, f"import {target}")

    up = [("planner_runtime.planners.scripted", "planner_runtime.serving.server"),
          ("device_farm.pool.pool", "planner_runtime.contract"),
          ("planner_runtime.contract", "planner_runtime.harness.skills"),
          ("planner_runtime.harness.episode", "planner_runtime.trajectories.store"),
          ("planner_runtime.runs.collect", "planner_runtime.cli.common")]
    allowed = [("planner_runtime.cli.main", "planner_runtime.serving.server"), ("planner_runtime.cli.main", "planner_runtime.cli.common"),
               ("planner_runtime.contract", "planner_runtime.errors"), ("planner_runtime.serving.server", "planner_runtime.planners"),
               ("planner_runtime.harness.episode", "planner_runtime.trajectories.schema")]
    assert [pair for pair in up if not _upward(edge(*pair))] == []
    assert [pair for pair in allowed if _upward(edge(*pair))] == []
    loop = [edge("a.x", "a.y"), edge("a.y", "a.z"), edge("a.z", "a.x"), edge("a.z", "a.w")]
    ((group, found),) = _cycles(loop)
    assert group == ["a.x", "a.y", "a.z"] and [e.source for e in found] == ["a.x", "a.y", "a.z"]
    assert _cycles(loop[:2] + loop[3:]) == []


def test_no_import_cycle_between_modules():
    found = violations()["cycles"]
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(f"  {c}" for c in found)


def test_no_import_points_up_a_layer():
    found = violations()["upward"]
    assert not found, f"{len(found)} upward import(s):\n" + "\n".join(f"  {u}" for u in found)


def test_no_module_is_over_the_line_limit():
    found = violations()["long"]
    assert not found, f"modules over {MAX_LINES} lines (split them, or add a reason to LONG_MODULES):\n" + "\n".join(
        f"  {m}" for m in found)
    assert all(why for why in LONG_MODULES.values())
