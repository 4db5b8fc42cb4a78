"""device_farm's import layers, read from the source: no import cycle, and no arrow up.

The walk reads every ``import`` in every module (function-level ones too) without importing
anything. Imports under ``if TYPE_CHECKING:`` never run, but they count all the same: a loop
that only a type checker follows is still two modules that cannot be read one without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import device_farm

ROOT = Path(device_farm.__file__).parent
PKG = "device_farm"

# What each package may import (besides itself and the modules at the top of device_farm:
# the Device protocol, errors, health, source, hierarchy...). Read bottom to top.
V = "device_farm.virtual"
ALLOWED: dict[str, set[str]] = {
    PKG: set(),
    "device_farm.adb": set(),
    "device_farm.appium": set(),
    "device_farm.pool": set(),
    f"{V}.ui": set(),
    f"{V}.adbd": set(),
    f"{V}.os": {f"{V}.ui", f"{V}.adbd"},
    f"{V}.apps": {f"{V}.os", f"{V}.ui"},
    f"{V}.uiautomator": {f"{V}.os", f"{V}.ui", f"{V}.adbd"},
    f"{V}.shell": {f"{V}.os", f"{V}.ui", f"{V}.uiautomator"},
    f"{V}.services": {f"{V}.shell", f"{V}.os", f"{V}.adbd"},
    f"{V}.faults": {f"{V}.os", f"{V}.adbd", f"{V}.uiautomator"},
    # the phone itself (phone, snapshot, source...) wires every room of the virtual package
    V: {f"{V}.{room}" for room in ("ui", "adbd", "os", "apps", "uiautomator", "shell", "services", "faults")}
       | {"device_farm.adb"},  # VirtualSource serves its phones through a private adb server
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str) -> list[tuple[str, bool]]:
    """(imported device_farm module, only for type checking) for every import in ``module``."""
    path = MODULES[module]
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                parts = base.split(".")[: len(base.split(".")) - node.level + 1]
                mod = ".".join(parts + ([mod] if mod else []))
            names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        for name in names:
            target = _resolve(name) if name.startswith(PKG) else None
            if target and target != module:
                found.append((target, typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(ast.parse(path.read_text()), False)
    return found


def _package(module: str) -> str:
    """The layer a module belongs to: the longest ALLOWED key it is in, else the top."""
    best = ""
    for pkg in ALLOWED:
        if (module == pkg or module.startswith(pkg + ".")) and len(pkg) > len(best):
            best = pkg
    return best or PKG


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            connect(v)
    return found


def test_device_farm_has_no_import_cycle() -> None:
    runtime = {m: {t for t, typing_only in _imports(m) if not typing_only} for m in MODULES}
    assert _cycles(runtime) == []


def test_device_farm_has_no_import_cycle_even_for_type_checking() -> None:
    """Apps see their system through `os.app.Runtime`, so nothing needs to name a module
    that names it back, not even under TYPE_CHECKING."""
    every = {m: {t for t, _ in _imports(m)} for m in MODULES}
    assert _cycles(every) == []


def test_the_virtual_phones_rooms_have_no_cycle_between_them() -> None:
    """Type-only imports count here: a room names nothing in a room above it."""
    rooms: dict[str, set[str]] = {}
    for module in MODULES:
        if module.startswith(V + "."):
            room = _package(module)
            rooms.setdefault(room, set()).update(
                _package(t) for t, _ in _imports(module)
                if _package(t).startswith(V) and _package(t) != room)
    for targets in list(rooms.values()):
        for target in targets:
            rooms.setdefault(target, set())
    assert _cycles(rooms) == []


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_arrow_up(package: str) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module in MODULES if _package(module) == package
        for target, _ in _imports(module)
        if _package(target) not in ALLOWED[package] | {package, PKG})
    assert wrong == []


def test_the_virtual_phones_system_never_imports_an_app() -> None:
    wrong = sorted(f"{m} imports {t}" for m in MODULES if m.startswith(f"{V}.os")
                   for t, _ in _imports(m) if t.startswith(f"{V}.apps"))
    assert wrong == []


def test_device_farm_never_imports_planner_runtime() -> None:
    wrong = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            wrong += [f"{module} imports {name}" for name in names if name.split(".")[0] == "planner_runtime"]
    assert wrong == []
