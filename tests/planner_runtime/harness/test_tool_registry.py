"""Tools are declared one module per app and found through a lazy registry: an episode imports
the tool modules of its phone's apps only, the planner sees exactly the tools, descriptions and
schemas it always saw, and the funnel hands each app tool its app's installed package (or tells
the planner the app is missing) so no tool looks it up itself."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from device_farm.adb.device import AdbDevice
from device_farm.virtual.apps.contacts import Contacts
from device_farm.virtual.apps.launcher import Launcher
from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.harness.apps import APPS
from planner_runtime.harness.tools import AppTool, ToolContext, ToolResult, ToolSet
from planner_runtime.harness.tools.clock import SetAlarm
from planner_runtime.harness.tools.core import AskUser
from planner_runtime.harness.tools.memory import Recall, Remember
from planner_runtime.harness.tools.registry import APP_MODULES, PACKAGE, app_tool_classes, default_tools
from planner_runtime.harness.tools.screenshot import Screenshot

SPECS = Path(__file__).with_name("tool_specs.json")
TOOLS_DIR = Path(importlib.import_module(PACKAGE).__file__).parent


def test_the_planner_sees_the_same_tools_descriptions_and_schemas():
    expected = json.loads(SPECS.read_text(encoding="utf-8"))
    assert [s.model_dump(mode="json") for s in default_tools().specs()] == expected["default"]
    per_episode = [cls.__new__(cls) for cls in (AskUser, Screenshot, Remember, Recall)]  # a spec is the class's
    assert [t.spec().model_dump(mode="json") for t in per_episode] == expected["per_episode"]


def test_every_catalogue_app_has_one_module_declaring_its_record_and_tools():
    assert set(APP_MODULES) == {a.name for a in APPS}
    for app, entry in APP_MODULES.items():
        module = importlib.import_module(f"{PACKAGE}.{entry.module}")
        assert module.APP.name == app
        for tool in module.TOOLS:
            assert tool.app == app, tool.name
            # a tool that needs its app gets the package from the funnel, never looks it up
            assert issubclass(tool, AppTool) == tool.needs_app == entry.needs_app, tool.name
    with pytest.raises(LookupError, match="no tool module for app 'Fax'"):
        app_tool_classes("Fax")


def test_core_tools_come_first_and_last_whatever_the_apps():
    names = default_tools([]).names()
    assert names[-1] == "finish" and "wait" in names and "open_app" in names
    assert {t.app for t in default_tools([])} == {None, "Files"}  # Files' tools work over the shell


LAZY = textwrap.dedent("""
    import json, sys
    from device_farm.adb.device import AdbDevice
    from planner_runtime.harness.toolbox import toolset_for
    serial, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    device = AdbDevice(serial, adb_host=host, adb_port=port)
    device.connect()
    tools, _, _ = toolset_for("Save Ada Lovelace as a contact, number +15550100", device, skills=[])
    loaded = sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("planner_runtime.harness.tools."))
    print(json.dumps({"loaded": loaded, "tools": tools.names()}))
    device.close()
""")


def test_an_episode_imports_the_tool_modules_of_its_phones_apps_only(phone_factory):
    phone = phone_factory(apps=[Launcher, Contacts])
    out = subprocess.run([sys.executable, "-c", LAZY, phone.serial, phone.adb.host, str(phone.adb.port)],
                         capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    app_modules = {e.module for e in APP_MODULES.values()}
    assert app_modules & set(seen["loaded"]) == {"contacts", "files"}
    assert "add_contact" in seen["tools"] and "finish" in seen["tools"]
    assert not {"set_alarm", "send_message", "send_money"} & set(seen["tools"])


class Probe(AppTool):
    """Says which package the funnel handed it."""

    name = "probe_clock"
    app = "Clock"
    description = "probe"

    def act(self, ctx: ToolContext, args: object, package: str) -> ToolResult:
        return ToolResult(result={"package": package})


def test_an_app_tool_gets_its_apps_installed_package_or_the_planner_hears_it_is_missing(phone_factory):
    tools = ToolSet([Probe(), SetAlarm()])
    with_clock, without = phone_factory(), phone_factory(apps=[Launcher, Contacts])
    for handle, package in ((with_clock, "com.google.android.deskclock"), (without, None)):
        device = AdbDevice(handle.serial, adb_host=handle.adb.host, adb_port=handle.adb.port)
        device.connect()
        try:
            ctx = ToolContext(device=device)
            probe = tools.execute(ToolCall(name="probe_clock", arguments={}), ctx)
            alarm = tools.execute(ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30}), ctx)
        finally:
            device.close()
        if package is None:
            for feedback in (probe, alarm):
                assert feedback.status is FeedbackStatus.error
                assert feedback.error.code is ErrorCode.app_not_installed
                assert feedback.error.hint == "no Clock app is installed on this phone"
        else:
            assert probe.status is FeedbackStatus.ok and probe.result == {"package": package}
            assert alarm.status is FeedbackStatus.ok


def _imports(path: Path) -> set[str]:
    """Every planner_runtime.harness.tools module ``path`` imports, wherever the import sits
    (type-checking blocks and function bodies too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(PACKAGE)}
    return found


def test_the_tool_modules_import_each_other_one_way():
    modules = {(PACKAGE if p.stem == "__init__" else f"{PACKAGE}.{p.stem}"): p for p in TOOLS_DIR.glob("*.py")}
    edges = {name: _imports(path) - {name} for name, path in modules.items()}
    done: set[str] = set()

    def walk(name: str, trail: tuple[str, ...]) -> None:
        if name in trail:
            raise AssertionError("import cycle: " + " -> ".join(trail[trail.index(name):] + (name,)))
        if name in done:
            return
        for target in sorted(edges.get(name, ())):
            walk(target, trail + (name,))
        done.add(name)

    for name in sorted(modules):
        walk(name, ())
