"""A file pushed to the phone (adb's sync protocol) meets the safety gate like every other write
a tool makes: replacing a file that is there is a delete of what it held and needs the user's
say; a new file is no effect; the harness pushing outside a tool call is judged by nothing."""

from __future__ import annotations

from pydantic import Field

from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.harness.safety import Policy, SafetyGate
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolResult, ToolSet

REPORT = "/sdcard/Download/report.txt"


class PushArgs(ToolArgs):
    path: str = Field(min_length=1)
    text: str


class PushFile(Tool):
    """A tool that writes a file and declares nothing: the write itself is judged."""

    name = "push_file"
    description = "Write a text file on the phone."
    Args = PushArgs

    def run(self, ctx: ToolContext, args: PushArgs) -> ToolResult:
        ctx.device.push(args.text.encode(), args.path)
        return ToolResult(result={"written": args.path})


def _read(device, path: str) -> str:
    return device.shell(["cat", path]).output


def _push(ctx: ToolContext, path: str, text: str):
    return ToolSet([PushFile()]).execute(ToolCall(name="push_file", arguments={"path": path, "text": text}), ctx)


def test_a_tool_cannot_overwrite_a_file_without_the_users_say(device):
    ctx = ToolContext(device=device)  # the default gate denies every sensitive effect
    ctx.device.push(b"Q3 figures", REPORT)  # the harness seeding the phone: no tool, no gate
    assert _read(device, REPORT) == "Q3 figures"

    feedback = _push(ctx, REPORT, "")
    assert feedback.status is FeedbackStatus.blocked
    assert feedback.error.code is ErrorCode.unsafe_action
    assert f"overwrite {REPORT}" in feedback.error.hint
    assert _read(device, REPORT) == "Q3 figures"

    fresh = _push(ctx, "/sdcard/Download/notes.txt", "milk")  # a new file loses nothing
    assert fresh.status is FeedbackStatus.ok
    assert _read(device, "/sdcard/Download/notes.txt") == "milk"


def test_a_policy_allowing_deletes_lets_a_tool_replace_a_file(device):
    ctx = ToolContext(device=device, gate=SafetyGate(policy=Policy(allow={"delete"})))
    ctx.device.push(b"Q3 figures", REPORT)
    assert _push(ctx, REPORT, "Q4 figures").status is FeedbackStatus.ok
    assert _read(device, REPORT) == "Q4 figures"
