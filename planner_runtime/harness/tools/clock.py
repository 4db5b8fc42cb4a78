"""Clock: the alarm tool, through ``AlarmClock.ACTION_SET_ALARM`` — the intent any clock app
handles — so it works on a real phone and on the virtual one alike."""

from __future__ import annotations

from pydantic import Field

from device_farm.android import Intent, start_activity
from device_farm.errors import ShellCommandError
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult

APP = app_named("Clock")
SET_ALARM = "android.intent.action.SET_ALARM"
ALARM_EXTRA = "android.intent.extra.alarm."


class SetAlarmArgs(ToolArgs):
    hour: int = Field(ge=0, le=23, description="Hour on the 24-hour clock, e.g. 7 for 7 AM, 19 for 7 PM")
    minutes: int = Field(ge=0, le=59, description="Minutes, 0-59")
    label: str = Field(default="", description="Optional alarm label")


class SetAlarm(AppTool):
    name = "set_alarm"
    app = APP.name
    description = "Create an alarm in the Clock app at the given time (24-hour clock)."
    Args = SetAlarmArgs

    def act(self, ctx: ToolContext, args: SetAlarmArgs, package: str) -> ToolResult:
        extras: dict[str, object] = {ALARM_EXTRA + "HOUR": args.hour, ALARM_EXTRA + "MINUTES": args.minutes}
        if args.label:
            extras[ALARM_EXTRA + "MESSAGE"] = args.label
        extras[ALARM_EXTRA + "SKIP_UI"] = True
        try:
            start_activity(ctx.device, Intent(action=SET_ALARM, extras=extras, component=None))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"{package} refused the alarm: {exc.output.strip()[:200]}") from exc
        return ToolResult(result={"hour": args.hour, "minutes": args.minutes, "label": args.label})


TOOLS = (SetAlarm,)
