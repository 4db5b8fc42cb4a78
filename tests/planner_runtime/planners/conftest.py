"""Shared fixtures: one converted copy of the embedded model per test run, one loaded planner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners.local import model_store


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh cache dir holding the converted embedded model (the ~20 s conversion runs once)."""
    if not (os.environ.get(model_store.ENV_GGUF) or model_store.packaged_gguf()):
        pytest.skip(f"embedded model not installed: {model_store.INSTALL_HINT}")
    cache = tmp_path_factory.mktemp("planner-cache")
    model_store.ensure_embedded_model(cache, download=False)
    return cache


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
