"""Calendar tools over CalendarContract.

``create_event`` opens the calendar app's editor with ``ACTION_INSERT`` on
``vnd.android.cursor.dir/event`` (``title``, ``beginTime``, ``endTime``, ``eventLocation``
extras) — the intent every calendar app handles — and taps Save. ``list_events`` reads
``content://com.android.calendar/events`` for one day. Times are the phone's local time
(``persist.sys.timezone``), written ``YYYY-MM-DD HH:MM``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from pydantic import Field

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from device_farm.hierarchy import Element
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen

APP = app_named("Calendar")

INSERT = "android.intent.action.INSERT"
EVENT_DIR_TYPE = "vnd.android.cursor.dir/event"
EVENTS_URI = "content://com.android.calendar/events"
TIME_FORMAT = "%Y-%m-%d %H:%M"
WHEN = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$"


def phone_zone(ctx: ToolContext) -> ZoneInfo:
    name = ctx.device.shell(["getprop", "persist.sys.timezone"]).output.strip()
    try:
        return ZoneInfo(name or "UTC")
    except (ValueError, KeyError):
        return ZoneInfo("UTC")


def to_millis(text: str, zone: ZoneInfo) -> int:
    try:
        return int(datetime.strptime(text, TIME_FORMAT).replace(tzinfo=zone).timestamp() * 1000)
    except ValueError as exc:
        raise ToolFailure(ErrorCode.invalid_arguments, f"{text!r} is not a date and time like 2026-12-01 14:00") from exc


def _is_save(e: Element) -> bool:
    return "tap" in e.actions and (e.text.strip().lower() == "save" or e.resource_id.endswith(":id/save"))


class CreateEventArgs(ToolArgs):
    title: str = Field(min_length=1, description="The event's title")
    start: str = Field(pattern=WHEN, description="Start, local time: YYYY-MM-DD HH:MM (24-hour)")
    end: str = Field(pattern=WHEN, description="End, local time: YYYY-MM-DD HH:MM (24-hour)")
    location: str = Field(default="", description="Optional place")


class CreateEvent(AppTool):
    name = "create_event"
    app = APP.name
    description = "Add an event to the Calendar app with a title, start and end time (and optionally a place)."
    Args = CreateEventArgs

    def act(self, ctx: ToolContext, args: CreateEventArgs, package: str) -> ToolResult:
        zone = phone_zone(ctx)
        begin, end = to_millis(args.start, zone), to_millis(args.end, zone)
        if end < begin:
            raise ToolFailure(ErrorCode.invalid_arguments, "the end is before the start")
        extras: dict[str, object] = {"title": args.title, "beginTime": begin, "endTime": end}
        if args.location:
            extras["eventLocation"] = args.location
        try:
            start_activity(ctx.device, Intent(action=INSERT, mime_type=EVENT_DIR_TYPE, extras=extras))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"no calendar app took the event: {exc.output.strip()[:200]}") from exc
        screen = wait_for_screen(ctx, lambda s: any(_is_save(e) for e in s.elements))
        save = next((e for e in screen.elements if _is_save(e)), None)
        if save is None:
            raise ToolFailure(ErrorCode.element_not_found, "the event editor opened but shows no Save button; nothing was saved")
        ctx.device.click(*save.bounds.center)
        ctx.observe()
        return ToolResult(result={"created": args.title, "start": args.start, "end": args.end}, observe=True)


class ListEventsArgs(ToolArgs):
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="The day, YYYY-MM-DD")


class ListEvents(AppTool):
    name = "list_events"
    app = APP.name
    description = "List the Calendar's events on one day: title, start, end, place."
    Args = ListEventsArgs

    def act(self, ctx: ToolContext, args: ListEventsArgs, package: str) -> ToolResult:
        zone = phone_zone(ctx)
        day = to_millis(args.date + " 00:00", zone)
        next_day = int((datetime.fromtimestamp(day / 1000, zone) + timedelta(days=1)).timestamp() * 1000)
        rows = content_query(ctx.device, EVENTS_URI, projection=["title", "dtstart", "dtend", "eventLocation"],
                             where=f"deleted=0 AND dtstart>={day} AND dtstart<{next_day}", sort="dtstart")

        def local(ms: str | None) -> str:
            return datetime.fromtimestamp(int(ms or 0) / 1000, zone).strftime(TIME_FORMAT) if ms else ""

        return ToolResult(result=[{"title": r.get("title"), "start": local(r.get("dtstart")), "end": local(r.get("dtend")),
                                   "location": r.get("eventLocation") or ""} for r in rows])


TOOLS = (CreateEvent, ListEvents)
