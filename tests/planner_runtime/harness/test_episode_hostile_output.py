"""Hostile model output never escapes the episode: JSON nested 10,000 deep, lone surrogates (as a
``\\ud800`` escape and as raw text), ``NaN``/``Infinity``, numbers past 64 bits, a megabyte of text
and arguments that are not an object each become error feedback; the step is stored in the SQLite
file and reads back, and the episode — and a collection — goes on to the task's end.

The scripted planner sends its text through the same parser as the local model's output; a
planner that hands over ready-made calls is held to the same limits by the episode.
"""

from __future__ import annotations

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect
from planner_runtime.contract import ErrorCode, ToolCall, TrajectoryStatus
from planner_runtime.harness.episode import Episode, EpisodeLimits
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners import PlannerOutput
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite, find_task
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.harness.identity import EpisodeIdentity


def _call(arguments: str) -> str:
    return '<tool_call>{"name": "set_alarm", "arguments": ' + arguments + "}</tool_call>"


HOSTILE = [  # (what the model writes, the error code it gets back)
    (_call('{"hour": ' + "[" * 10_000 + "]" * 10_000 + "}"), ErrorCode.malformed_output),
    (_call('"' + "[" * 10_000 + '"'), ErrorCode.malformed_output),  # double-encoded, and deep
    (_call('{"hour": 7, "minutes": 30, "label": "\\ud800"}'), ErrorCode.invalid_arguments),
    (_call('{"hour": 7, "minutes": 30, "label": "\ud800"}'), ErrorCode.invalid_arguments),  # a raw lone surrogate
    ("I am thinking \udc00 about it", ErrorCode.no_tool_call),
    (_call('{"hour": NaN, "minutes": 30}'), ErrorCode.invalid_arguments),
    (_call('{"hour": 7, "minutes": Infinity}'), ErrorCode.invalid_arguments),
    (_call('{"hour": -Infinity, "minutes": 30}'), ErrorCode.invalid_arguments),
    (_call('{"hour": 7, "minutes": 1e999}'), ErrorCode.invalid_arguments),
    (_call('{"hour": ' + "9" * 5000 + ', "minutes": 30}'), ErrorCode.invalid_arguments),
    (_call('{"hour": 7, "minutes": 30, "label": "' + "x" * 1_000_000 + '"}'), ErrorCode.malformed_output),
    (_call("[7, 30]"), ErrorCode.invalid_arguments),
    (_call('"7:30"'), ErrorCode.invalid_arguments),
]
SET_ALARM = {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}
FINISH = {"name": "finish", "arguments": {"answer": "Alarm set for 7:30"}}


def test_hostile_output_is_feedback_stored_and_read_back_and_the_task_succeeds(device, device_ref, tmp_path):
    path = tmp_path / "trajectories.sqlite"
    planner = ScriptedPlanner([text for text, _ in HOSTILE] + [SET_ALARM, FINISH])
    with TrajectoryStore(path) as store:
        traj = run_goal("Set an alarm for 7:30", device=device, identity=EpisodeIdentity(device=device_ref),
                        planner=planner, store=store, task=find_task("clock.set_alarm"), max_steps=len(HOSTILE) + 2)

    assert traj.status is TrajectoryStatus.finished and traj.verdict.success, traj.verdict
    codes = [s.feedback.error.code if s.feedback.error else None for s in traj.steps]
    assert codes == [code for _, code in HOSTILE] + [None, None]
    hints = [s.feedback.error.hint for s in traj.steps[: len(HOSTILE)]]
    assert "deeper than" in hints[0] or "too deep" in hints[0]
    assert "surrogate" in hints[2] and "surrogate" in hints[3] and "NaN" in hints[5] and "Infinity" in hints[6]
    assert "262144" in hints[10] and "JSON object" in hints[11]
    assert "I am thinking \ufffd about it" == traj.steps[4].raw_output  # kept, made storable
    assert len(traj.steps[10].raw_output) < 300_000  # the megabyte is cut in the record
    assert max(len(m.content) for m in traj.messages_at(len(traj.steps) - 1)) < 10_000  # and in the model's later input

    with TrajectoryStore(path, create=False) as reopened:
        again = reopened.get(traj.id)
    assert [s.feedback for s in again.steps] == [s.feedback for s in traj.steps]
    assert [s.raw_output for s in again.steps] == [s.raw_output for s in traj.steps]


class HandsOverCalls:
    """A planner backend that builds its calls itself (no text to parse), some of them unfit."""

    name, release = "hands-over", "hands-over:1"

    def __init__(self, outputs: list[PlannerOutput]) -> None:
        self.outputs = outputs

    def plan(self, messages, tools, *, sampling=None):  # noqa: ANN001, ANN201
        return self.outputs.pop(0)


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_unfit_calls_a_planner_hands_over_are_feedback_too(device, device_ref, store):
    unfit = [
        ToolCall(name="set_alarm", arguments={"hour": float("nan"), "minutes": 30}),
        ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30, "label": "\ud800"}),
        ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30, "label": _nested(200)}),
        ToolCall(name="set_alarm", arguments={"hour": 10**30, "minutes": 30}),
        ToolCall(name="\udfff", arguments={}),
    ]
    outputs = [PlannerOutput(text="\ud800 raw", tool_calls=(call,)) for call in unfit]
    outputs.append(PlannerOutput(text="", tool_calls=(ToolCall(name="finish", arguments={"answer": "gave up"}),)))
    episode = Episode(goal="Set an alarm for 7:30", planner=HandsOverCalls(outputs), tools=default_toolset(),
                      ctx=ToolContext(device=device), store=store, identity=EpisodeIdentity(device=device_ref), limits=EpisodeLimits(max_steps=8))
    traj = episode.run()
    assert traj.status is TrajectoryStatus.finished and len(traj.steps) == len(unfit) + 1
    assert [s.feedback.error.code for s in traj.steps[:-1]] == [
        ErrorCode.invalid_arguments, ErrorCode.invalid_arguments, ErrorCode.malformed_output,
        ErrorCode.invalid_arguments, ErrorCode.unknown_tool]
    assert all(s.tool_call is None and s.raw_output == "\ufffd raw" for s in traj.steps[:-1])
    assert store.get(traj.id).steps == traj.steps


BAD_TURNS = [text for text, _ in HOSTILE[:4]]  # deep, deep double-encoded, surrogate escape, raw surrogate
SOLUTIONS = {
    "clock.set_alarm": SET_ALARM,
    "contacts.add_contact": {"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}},
}


@pytest.fixture
def pool(tmp_path):
    with DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as p:
        yield p


def test_bad_output_never_stops_a_collection(pool, store):
    tasks = [t for t in builtin_suite().tasks if t.id in SOLUTIONS]

    def planner_for(task):  # noqa: ANN001, ANN202
        return ScriptedPlanner(BAD_TURNS + [SOLUTIONS[task.id], {"name": "finish", "arguments": {"answer": "done"}}])

    coll, progress = collect(tasks, pool=pool, store=store, planner_for=planner_for, workers=2)
    assert (progress.total, progress.success, progress.failed, progress.infra) == (2, 2, 0, 0)
    trajs = [store.get(i) for i in store.ids(collection=coll)]
    assert sorted(t.task_id for t in trajs) == sorted(SOLUTIONS)
    for traj in trajs:
        assert [s.feedback.error.code for s in traj.steps[:4]] == [code for _, code in HOSTILE[:4]]
