"""The default tool list of the harness, in the order the planner sees it."""

from __future__ import annotations

from planner_runtime.harness.tools import ToolSet
from planner_runtime.harness.tools.apps import AddContact, Finish, SetAlarm
from planner_runtime.harness.tools.gui import Back, Home, OpenApp, ReadScreen, Tap, TypeText


def default_toolset() -> ToolSet:
    return ToolSet([OpenApp(), ReadScreen(), Tap(), TypeText(), Back(), Home(), SetAlarm(), AddContact(), Finish()])
