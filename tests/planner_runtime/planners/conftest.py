"""Shared fixtures: one loaded planner over the run's converted model (``model_cache``, from the
runtime tests' conftest), two tools and a chat."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_runtime.contract import Message, Role, ToolSpec


@pytest.fixture(scope="session")
def planner(model_cache: Path):
    from planner_runtime.planners.local.planner import LocalPlanner

    return LocalPlanner(cache_dir=model_cache, max_new_tokens=24).load()


@pytest.fixture
def two_tools() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="set_alarm",
            description="Set an alarm on the phone's clock.",
            parameters={
                "type": "object",
                "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}},
                "required": ["hour", "minute"],
            },
        ),
        ToolSpec(
            name="send_sms",
            description="Send a text message to a phone number.",
            parameters={
                "type": "object",
                "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                "required": ["to", "body"],
            },
        ),
    ]


@pytest.fixture
def alarm_chat() -> list[Message]:
    return [
        Message(role=Role.system, content="You operate an Android phone for the user."),
        Message(role=Role.user, content="Wake me up at 7:30 tomorrow."),
    ]
