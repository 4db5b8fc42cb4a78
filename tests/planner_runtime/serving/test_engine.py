"""The serving engine's worker never dies on a planner's failure, and never leaves a caller waiting."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Message, Role, ToolCall
from planner_runtime.errors import PlannerError
from planner_runtime.planners import Sampling
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.planners.local.batch import PlanRequest
from planner_runtime.serving.engine import Engine

REQUEST = PlanRequest((Message(role=Role.user, content="Wake me at 7:30"),), (), Sampling(max_new_tokens=8))


class Flaky(ScriptedPlanner):
    """Fails its first call with an unexpected error (a bug, a proxy's broken reply)."""

    calls = 0

    def plan(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("connection reset")
        return super().plan(*args, **kwargs)


def test_an_unexpected_planner_error_fails_that_request_and_the_engine_goes_on():
    engine = Engine(Flaky([ToolCall(name="set_alarm", arguments={"hour": 7})] * 2), gather_s=0.0).start()
    try:
        with pytest.raises(RuntimeError, match="connection reset"):
            engine.submit(REQUEST).result(timeout=10)
        assert engine.submit(REQUEST).result(timeout=10).tool_calls[0].name == "set_alarm"
    finally:
        engine.stop()


def test_requests_after_stop_fail_at_once():
    engine = Engine(ScriptedPlanner([ToolCall(name="set_alarm", arguments={})])).start()
    engine.stop()
    assert engine.stopped
    with pytest.raises(PlannerError, match="shutting down"):
        engine.submit(REQUEST).result(timeout=1)
