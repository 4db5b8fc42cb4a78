"""A call the planner's token budget closed early is never run: a shortened SMS is not sent. The
episode answers it with feedback, stores the step, and the model's whole call runs next turn."""

from __future__ import annotations

import json

from device_farm.android import content_query
from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall, TrajectoryStatus
from planner_runtime.harness.episode import Episode, EpisodeLimits
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners import PlannerOutput
from planner_runtime.planners.openai.answer import read_answer
from planner_runtime.planners.toolcalls import format_tool_call
from planner_runtime.harness.identity import EpisodeIdentity

WHOLE = ("Hi Grace, the compiler talk moved from Thursday to Friday at 3pm in room 4B; please bring "
         "the slides and the demo laptop, and tell Ada too. Thanks!")
SHORTENED = WHOLE[:108]  # where a 96-token budget used to close the string


class Replays:
    """A planner backend that hands over ready-made outputs, one a turn."""

    name, release = "replays", "replays:1"

    def __init__(self, outputs: list[PlannerOutput]) -> None:
        self.outputs = outputs

    def plan(self, messages, tools, *, sampling=None):  # noqa: ANN001, ANN201
        return self.outputs.pop(0)


def _output(call: ToolCall, *, cut: bool = False) -> PlannerOutput:
    return PlannerOutput(text=format_tool_call(call), tool_calls=(call,), cut=cut)


def test_a_cut_call_is_answered_not_run_and_the_step_is_stored(device, device_ref, store):
    device.shell(["content", "delete", "--uri", "content://sms"])
    cut = ToolCall(name="send_message", arguments={"to": "+15550123", "text": SHORTENED})
    whole = ToolCall(name="send_message", arguments={"to": "+15550123", "text": WHOLE})
    planner = Replays([_output(cut, cut=True), _output(whole),
                       _output(ToolCall(name="finish", arguments={"answer": "sent"}))])
    ctx = ToolContext(device=device, gate=SafetyGate(policy=Policy(allow={Sensitivity.send})))
    episode = Episode(goal="Text Grace that the talk moved", planner=planner, tools=default_toolset(),
                      ctx=ctx, store=store, identity=EpisodeIdentity(device=device_ref), limits=EpisodeLimits(max_steps=5))
    traj = episode.run()

    assert traj.status is TrajectoryStatus.finished and len(traj.steps) == 3
    first = traj.steps[0]
    assert first.tool_call == cut and first.feedback.status is FeedbackStatus.error
    assert first.feedback.error.code is ErrorCode.malformed_output and "not run" in first.feedback.error.hint
    assert "cut" in traj.steps[1].messages[-1].content  # the model is told why, in its next input
    assert traj.steps[1].feedback.status is FeedbackStatus.ok
    # only the whole message reached the phone
    assert [r["body"] for r in content_query(device, "content://sms/sent")] == [WHOLE]
    assert store.get(traj.id).steps == traj.steps


def test_a_server_answer_that_ran_out_of_tokens_is_cut():
    # our own server says "length" for a call its budget closed; so does any server cut at max_tokens
    call = {"id": "call_1", "type": "function",
            "function": {"name": "send_message", "arguments": json.dumps({"to": "+15550123", "text": SHORTENED})}}
    for finish, cut in (("length", True), ("tool_calls", False), ("stop", False)):
        payload = {"choices": [{"index": 0, "finish_reason": finish,
                                "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
        out = read_answer(payload)
        assert [c.arguments["text"] for c in out.tool_calls] == [SHORTENED] and out.cut is cut
