"""Fixtures for training tests: a store with real episodes on the virtual phone (a verified
success with a mistake it recovered from, and a verified failure), the embedded tokenizer."""

from __future__ import annotations

import pytest

from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.set_alarm")
GOOD = [
    {"name": "set_alarm", "arguments": {"hour": "7", "minutes": 30}},  # invalid: an error turn, masked
    {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
    {"name": "finish", "arguments": {"answer": "done"}},
]
BAD = [{"name": "set_alarm", "arguments": {"hour": 8, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "done"}}]


def record(store, device, device_ref, script, *, collection: str | None = None):  # noqa: ANN001, ANN201
    identity = EpisodeIdentity(device=device_ref, collection=collection)
    return run_goal(TASK.rendered_goal(), device=device, identity=identity, planner=ScriptedPlanner(script), store=store, task=TASK)


@pytest.fixture
def episodes(device, device_ref, store):
    """(success, failure) trajectories of ``clock.set_alarm`` in ``store``."""
    runs = [record(store, device, device_ref, script) for script in (GOOD, BAD)]
    assert [r.verdict.success for r in runs] == [True, False]
    return runs


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from planner_runtime.planners.local.model_store import ensure_embedded_model

    return AutoTokenizer.from_pretrained(ensure_embedded_model())
