"""Contract records: immutable, strict and JSON round-trip."""

import pytest
from pydantic import ValidationError

from planner_runtime.contract import (
    Check,
    DeviceRef,
    ErrorCode,
    Feedback,
    Message,
    Observation,
    Step,
    ToolCall,
    Trajectory,
    Usage,
    Verdict,
)


def _trajectory() -> Trajectory:
    call = ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30})
    step = Step(
        index=0,
        messages=(Message(role="system", content="s"), Message(role="user", content="Set an alarm")),
        raw_output='<tool_call>\n{"name": "set_alarm"}\n</tool_call>',
        tool_call=call,
        feedback=Feedback.ok(call.call_id, {"hour": 7}, Observation(package="p", screen="[0] Button", digest="d")),
        usage=Usage(prompt_tokens=10, completion_tokens=5),
    )
    return Trajectory(
        goal="Set an alarm",
        source="sandbox",
        device=DeviceRef(serial="127.0.0.1:5555"),
        planner="scripted",
        steps=(step,),
        verdict=Verdict(success=True, score=1.0, checks=(Check(name="c", passed=True, evidence="1 row"),)),
    )


def test_trajectory_round_trips_through_json():
    traj = _trajectory()
    again = Trajectory.from_json(traj.to_json())
    assert again == traj
    assert again.steps[0].feedback.observation.screen == "[0] Button"


def test_records_are_immutable():
    call = ToolCall(name="tap", arguments={"element": 1})
    with pytest.raises(ValidationError):
        call.name = "other"


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"name": "tap", "arguments": {}, "extra": 1})


def test_feedback_fail_carries_code_and_hint():
    fb = Feedback.fail("c1", ErrorCode.unknown_tool, "no tool named 'x'")
    assert fb.status == "error" and fb.error.code is ErrorCode.unknown_tool and "x" in fb.error.hint


def test_verdict_score_is_bounded():
    with pytest.raises(ValidationError):
        Verdict(success=True, score=1.5)


def test_usage_adds():
    assert Usage(prompt_tokens=1, completion_tokens=2) + Usage(prompt_tokens=3, completion_tokens=4) == Usage(
        prompt_tokens=4, completion_tokens=6
    )
