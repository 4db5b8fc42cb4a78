"""Which module declares each app's tools, imported only when an episode needs that app.

Every episode reads the whole app catalogue (:mod:`planner_runtime.harness.apps`, plain data)
but offers the tools of only the apps its phone has, so a tool set is built from the modules of
those apps: the others are never imported. ``default_tools()`` with no apps named imports every
module, for listing every spec the planner can be offered. The order here is the order tools are
offered in, so the same goal on the same phone always gets the same prompt.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Iterable

from planner_runtime.harness.tools import Tool, ToolSet
from planner_runtime.harness.tools.core import Finish, Wait
from planner_runtime.harness.tools.gui import TOOLS as GUI_TOOLS

PACKAGE = "planner_runtime.harness.tools"


@dataclass(frozen=True)
class AppModule:
    """Where an app's tools are declared (a module with ``APP`` and ``TOOLS``)."""

    module: str  # under this package
    needs_app: bool = True  # False: its tools work without the app installed, so are always loaded


APP_MODULES: dict[str, AppModule] = {  # catalogue name → module, in the order tools are offered
    "Clock": AppModule("clock"),
    "Contacts": AppModule("contacts"),
    "Settings": AppModule("settings"),
    "Keep Notes": AppModule("notes"),
    "Files": AppModule("files", needs_app=False),
    "Maps": AppModule("maps"),
    "YouTube Music": AppModule("music"),
    "Messages": AppModule("messaging"),
    "Shopping": AppModule("shopping"),
    "Food delivery": AppModule("food"),
    "Travel": AppModule("travel"),
    "Payments": AppModule("payments"),
    "Phone": AppModule("phone"),
    "Gmail": AppModule("email"),
    "Calendar": AppModule("calendar"),
}


def app_tool_classes(app: str) -> tuple[type[Tool], ...]:
    """The tools declared for ``app`` (a catalogue name), importing its module."""
    try:
        entry = APP_MODULES[app]
    except KeyError:
        raise LookupError(f"no tool module for app {app!r}; known: {', '.join(APP_MODULES)}") from None
    return importlib.import_module(f"{PACKAGE}.{entry.module}").TOOLS


def default_tools(apps: Iterable[str] | None = None) -> ToolSet:
    """The default tools: the GUI ones and ``wait``, the tools of ``apps`` (catalogue names;
    None: every app) and of apps whose tools need no app installed, then ``finish``. Only
    those apps' modules are imported."""
    wanted = set(APP_MODULES) if apps is None else set(apps)
    chosen = [name for name, entry in APP_MODULES.items() if name in wanted or not entry.needs_app]
    tools: list[Tool] = [cls() for cls in GUI_TOOLS] + [Wait()]
    tools += [cls() for app in chosen for cls in app_tool_classes(app)]
    return ToolSet(tools + [Finish()])
