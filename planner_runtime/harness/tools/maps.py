"""Maps tools over Google Maps' public intents: ``search_place`` views ``geo:0,0?q=...`` and reads
the place sheet, ``navigate_to`` starts turn-by-turn with ``google.navigation:q=...&mode=...``, and
``save_place`` searches and taps the sheet's Save button — all as on a real phone with Maps.
``saved_places`` reads the saved list from the Saved tab's provider on the virtual phone."""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from pydantic import Field

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Screen
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen

APP = app_named("Maps")

VIEW = "android.intent.action.VIEW"
MODES = {"driving": "d", "walking": "w", "bicycling": "b"}
SAVED_URI = "content://com.google.android.apps.maps/saved_places"


def _view(ctx: ToolContext, package: str, uri: str) -> None:
    try:
        start_activity(ctx.device, Intent(action=VIEW, data=uri, component=None))
    except ShellCommandError as exc:
        raise ToolFailure(ErrorCode.action_failed, f"{package} did not open {uri}: {exc.output.strip()[:200]}") from exc


def _sheet(screen: Screen) -> dict[str, str] | None:
    title = next((e.text for e in screen.elements if e.resource_id.endswith(":id/title") and e.text), None)
    address = next((e.text for e in screen.elements if e.resource_id.endswith(":id/address")), "")
    return None if title is None else {"name": title, "address": address}


def _search(ctx: ToolContext, package: str, query: str) -> tuple[Screen, dict[str, str]]:
    _view(ctx, package, f"geo:0,0?q={quote(query)}")
    screen = wait_for_screen(ctx, lambda s: _sheet(s) is not None, timeout=3.0)
    place = _sheet(screen)
    if place is None:
        raise ToolFailure(ErrorCode.element_not_found, f"Maps showed no place for {query!r}; call read_screen")
    return screen, place


class SearchPlaceArgs(ToolArgs):
    query: str = Field(min_length=1, description="A place name or an address")


class SearchPlace(AppTool):
    name = "search_place"
    app = APP.name
    description = "Look a place up in Maps; returns its name and address."
    Args = SearchPlaceArgs

    def act(self, ctx: ToolContext, args: SearchPlaceArgs, package: str) -> ToolResult:
        _, place = _search(ctx, package, args.query)
        return ToolResult(result=place, observe=True)


class NavigateToArgs(ToolArgs):
    destination: str = Field(min_length=1, description="Where to go: a place name or a full address")
    mode: Literal["driving", "walking", "bicycling"] = Field(default="driving", description="How to travel")


class NavigateTo(AppTool):
    name = "navigate_to"
    app = APP.name
    description = "Start turn-by-turn navigation in Maps to a destination (driving, walking or bicycling)."
    Args = NavigateToArgs

    def act(self, ctx: ToolContext, args: NavigateToArgs, package: str) -> ToolResult:
        _view(ctx, package, f"google.navigation:q={quote(args.destination)}&mode={MODES[args.mode]}")
        wait_for_screen(ctx, lambda s: any(e.text == "Exit" for e in s.elements), timeout=3.0)
        return ToolResult(result={"navigating_to": args.destination, "mode": args.mode}, observe=True)


class SavePlaceArgs(ToolArgs):
    query: str = Field(min_length=1, description="The place to save, by name or address")


class SavePlace(AppTool):
    name = "save_place"
    app = APP.name
    description = "Save a place to your saved places in Maps."
    Args = SavePlaceArgs

    def act(self, ctx: ToolContext, args: SavePlaceArgs, package: str) -> ToolResult:
        screen, place = _search(ctx, package, args.query)
        button = next((e for e in screen.elements if e.text in ("Save", "Saved") and "tap" in e.actions), None)
        if button is None:
            raise ToolFailure(ErrorCode.element_not_found, "the place sheet has no Save button")
        if button.text == "Save":
            ctx.device.click(*button.bounds.center)
            ctx.observe()
        return ToolResult(result={"saved": place["name"], "address": place["address"]}, observe=True)


class SavedPlaces(AppTool):
    name = "saved_places"
    app = APP.name
    description = "List the places saved in Maps (name, address, list)."

    def act(self, ctx: ToolContext, args: object, package: str) -> ToolResult:
        try:
            rows = content_query(ctx.device, SAVED_URI, projection=["name", "address", "list"])
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"saved places are not readable here; open Maps' You tab: {exc.output[:120]}") from exc
        return ToolResult(result=rows)


TOOLS = (SearchPlace, NavigateTo, SavePlace, SavedPlaces)
