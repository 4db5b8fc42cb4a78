"""Flagging from episodes the real harness ran on the virtual phone: a sensitive action stopped or
confirmed (safety), repeats of one task that disagree (conflict), a verdict resting on the answer
alone and low token log-probabilities (low confidence); a second run adds nothing."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from planner_runtime.contract import TurnTokens
from planner_runtime.data.review import queue
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task

SEND = find_task("messages.send_text")
PHOTOS = find_task("files.count_camera_photos")
ALARM = find_task("clock.set_alarm")
GOOD_ALARM = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "done"}}]
BAD_ALARM = [{"name": "set_alarm", "arguments": {"hour": 8, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "done"}}]


class UnsurePlanner(ScriptedPlanner):
    """The script, with each turn's tokens given low log-probabilities (as an unsure model's would be)."""

    def plan(self, messages, tools, *, sampling=None):  # noqa: ANN001, ANN201 - the Planner protocol
        out = super().plan(messages, tools, sampling=sampling)
        tokens = TurnTokens(prompt_ids=(1, 2, 3), completion_ids=(7, 8, 9, 10), logprobs=(0.0, -2.5, -3.0, -4.0),
                            sampled=(False, True, True, True), tokenizer="test")
        return out.model_copy(update={"tokens": tokens})


@dataclass
class Episodes:
    blocked: str
    confirmed: str
    answer_only: str
    repeat_ok: str
    repeat_bad: str
    unsure: str


@pytest.fixture
def episodes(device, device_ref, store) -> Episodes:
    def run(task, script, *, gate=None, planner=None, collection=None, repeat=0) -> str:
        identity = EpisodeIdentity(device=device_ref, collection=collection, item=f"{task.id}#{repeat}" if collection else None)
        traj = run_goal(task.rendered_goal(), device=device, identity=identity, planner=planner or ScriptedPlanner(script),
                        store=store, task=task, gate=gate)
        return traj.id

    demo = [{"name": c.name, "arguments": c.arguments} for c in SEND.rendered_demo()]
    found = Episodes(
        blocked=run(SEND, demo),  # no policy and nobody to ask: the gate stops it
        confirmed=run(SEND, demo, gate=SafetyGate(confirm=lambda *_: True)),
        answer_only=run(PHOTOS, [{"name": "list_files", "arguments": {"folder": "DCIM/Camera"}},
                                 {"name": "finish", "arguments": {"answer": "3 photos"}}]),
        repeat_ok=run(ALARM, GOOD_ALARM, collection="c1", repeat=0),
        repeat_bad=run(ALARM, BAD_ALARM, collection="c1", repeat=1),
        unsure=run(ALARM, [], planner=UnsurePlanner(GOOD_ALARM)),
    )
    assert store.get(found.answer_only).verdict.success and store.get(found.repeat_ok).verdict.success
    assert not store.get(found.repeat_bad).verdict.success
    return found


def test_each_signal_queues_its_reason_once_and_safety_comes_first(store, episodes):
    report = queue.flag(store)
    got = {(i.trajectory_id, i.reason): i for i in queue.items(store)}
    assert len(report.added) == len(got) == report.found
    blocked = got[(episodes.blocked, "safety")]
    assert "step 1 send_message blocked: send_message was not run" in blocked.detail, blocked.detail
    confirmed = got[(episodes.confirmed, "safety")]
    assert "ran, confirmed by the user" in confirmed.detail and confirmed.priority > blocked.priority
    answer = got[(episodes.answer_only, "low_confidence")]
    assert "rests only on the answer text" in answer.detail and "'3 photos'" in answer.detail
    for tid in (episodes.repeat_ok, episodes.repeat_bad):
        assert "2 repeats of clock.set_alarm in collection c1 disagree: 1 succeeded, 1 failed" in got[(tid, "conflict")].detail
    unsure = got[(episodes.unsure, "low_confidence")]
    assert "mean token log-probability -3.17 over 6 sampled tokens" in unsure.detail  # the forced token left out
    # a task checked on the phone's state is not low confidence; nothing but the above was flagged
    assert set(got) == {(episodes.blocked, "safety"), (episodes.confirmed, "safety"), (episodes.answer_only, "low_confidence"),
                        (episodes.repeat_ok, "conflict"), (episodes.repeat_bad, "conflict"), (episodes.unsure, "low_confidence")}
    # review order: what ran before what was stopped, safety before conflict before low confidence
    assert [i.reason for i in queue.items(store)][:4] == ["safety", "safety", "conflict", "conflict"]
    assert queue.take(store, "alice").trajectory_id == episodes.confirmed

    again = queue.flag(store)
    assert again.added == () and again.found == report.found and len(queue.items(store)) == len(got)


def test_a_collection_flags_only_its_own_trajectories(store, episodes):
    report = queue.flag(store, collection="c1")
    assert sorted((i.trajectory_id, i.reason) for i in report.added) == sorted(
        [(episodes.repeat_ok, "conflict"), (episodes.repeat_bad, "conflict")])
