"""Apps see the virtual phone's system only as `os.app.Runtime`: the system has every member
the Protocol declares, with the same signature and types, and the apps use nothing else."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

import device_farm.virtual.apps as apps_package
from device_farm.virtual.apps import default_apps
from device_farm.virtual.os import app as app_module
from device_farm.virtual.os.app import Runtime
from device_farm.virtual.os.system import AndroidSystem

DATA = set(typing.get_type_hints(Runtime))
CALLABLE = {name for name, value in vars(Runtime).items()
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))}


@pytest.fixture
def system() -> typing.Iterator[AndroidSystem]:
    phone = AndroidSystem("runtime", default_apps())
    try:
        yield phone
    finally:
        phone.shutdown()


def test_the_system_is_a_runtime(system: AndroidSystem) -> None:
    runtime: Runtime = system  # what App.__init__ receives
    assert isinstance(runtime, Runtime)
    for name in sorted(DATA):
        hint = typing.get_type_hints(Runtime)[name]
        assert isinstance(getattr(system, name), typing.get_origin(hint) or hint), name


@pytest.mark.parametrize("name", sorted(CALLABLE))
def test_each_runtime_member_has_the_systems_signature(name: str) -> None:
    declared, real = vars(Runtime)[name], inspect.getattr_static(AndroidSystem, name)
    if isinstance(declared, property):
        assert isinstance(real, property), f"{name} is a property on Runtime"
        declared, real = declared.fget, real.fget
    assert inspect.signature(real).parameters.keys() == inspect.signature(declared).parameters.keys()
    assert [p.kind for p in inspect.signature(real).parameters.values()] == [
        p.kind for p in inspect.signature(declared).parameters.values()]
    assert typing.get_type_hints(real) == typing.get_type_hints(declared)


def _system_members_used(path: Path) -> set[str]:
    """Names read off `self.system` / `self.app.system` in one module."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "system":
            used.add(node.attr)
    return used


def test_the_runtime_is_exactly_what_apps_and_activities_use() -> None:
    sources = [*Path(apps_package.__file__).parent.glob("*.py"), Path(app_module.__file__)]
    used = set().union(*(_system_members_used(path) for path in sources))
    assert used == DATA | CALLABLE
