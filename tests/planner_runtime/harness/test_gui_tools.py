"""GUI tools on the virtual phone through the real adb server: scroll, swipe, long press, wait."""

from __future__ import annotations

import time

from planner_runtime.contract import FeedbackStatus, ToolCall
from planner_runtime.harness.toolbox import toolset_for

CALLS = "content://call_log/calls"


def _call(tools, ctx, name, **arguments):
    fb = tools.execute(ToolCall(name=name, arguments=arguments), ctx)
    assert fb.status is FeedbackStatus.ok, fb
    return fb


def test_scroll_shows_more_of_a_list_and_comes_back(device):
    for i in range(15):
        device.shell(["content", "insert", "--uri", CALLS, "--bind", f"number:s:+1555050{i:02d}",
                      "--bind", f"date:l:{1700000000000 + i}"])
    tools, ctx, _ = toolset_for("Who called me?", device)
    first = _call(tools, ctx, "open_app", app="Phone").observation
    assert "+155505014" in first.screen and "+155505000" not in first.screen
    moved = _call(tools, ctx, "scroll", direction="down").observation
    assert any(line.startswith(("+", "-", "~")) for line in moved.changes.splitlines())  # the planner is told what moved
    for _ in range(2):
        down = _call(tools, ctx, "scroll", direction="down").observation
    assert "+155505000" in down.screen and "+155505014" not in down.screen
    for _ in range(3):
        up = _call(tools, ctx, "scroll", direction="up").observation
    assert "+155505014" in up.screen


def test_swipe_down_from_the_top_opens_the_notification_shade(device):
    tools, ctx, _ = toolset_for("Check my notifications", device)
    ctx.observe()
    shade = _call(tools, ctx, "swipe", direction="down").observation
    assert shade.package != "com.google.android.apps.nexuslauncher", shade.screen


def test_long_press_and_wait(device):
    tools, ctx, _ = toolset_for("Look at the clock", device)
    screen = _call(tools, ctx, "open_app", app="Clock").observation
    tab = next(e for e in ctx.screen.elements if e.text == "Alarm" and "tap" in e.actions or e.description == "Alarm")
    assert _call(tools, ctx, "long_press", element=tab.id).observation.package == screen.package
    started = time.monotonic()
    _call(tools, ctx, "wait", seconds=0.5)
    assert time.monotonic() - started >= 0.5
    fb = tools.execute(ToolCall(name="scroll", arguments={"direction": "sideways"}), ctx)
    assert fb.error.code == "invalid_arguments"
