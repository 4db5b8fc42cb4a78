"""A step keeps only the messages new at its turn, and ``Trajectory.messages_at(i)`` rebuilds the
exact input the planner was given at turn i: checked for episodes the real harness runs on the
virtual phone (scripted planner, every kind of turn: calls, errors, text with no call, several
calls, timeouts, a turn the episode's time ran out on, a sub-agent's turns), for records from
before (whole input per step) and for a mix of both."""

from __future__ import annotations

import time
from typing import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_runtime.contract import Message, Role, Source, ToolSpec
from planner_runtime.harness.episode import Episode, EpisodeLimits
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners import PlannerOutput, PlannerTimeout, Sampling
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.harness.identity import EpisodeIdentity

TIMEOUT = "<the server does not answer>"
TURNS = [
    {"name": "read_screen", "arguments": {}},
    {"name": "open_app", "arguments": {"app": "Clock"}},
    {"name": "open_app", "arguments": {"app": "Contacts"}},
    {"name": "set_alarm", "arguments": {"hour": "seven"}},  # bad arguments
    {"name": "fly_to_the_moon", "arguments": {}},  # no such tool
    {"name": "ask_user", "arguments": {"question": "Which one?"}},  # nobody is there
    "I would rather just talk about it.",  # no call at all
    '<tool_call>{"name": "read_screen", "arguments": {}}</tool_call><tool_call>{"name": "read_screen", "arguments": {}}</tool_call>',
    "x" * 5000,  # a runaway reply: the next input echoes only its start
    TIMEOUT,
]


class RecordingPlanner:
    """The scripted planner, remembering every input it is given; a ``TIMEOUT`` item is a turn
    whose server never answers."""

    name = "scripted"
    release = "scripted"

    def __init__(self, script: Sequence[object]) -> None:
        self.script = list(script)
        self.inner = ScriptedPlanner([item for item in script if item != TIMEOUT])
        self.inputs: list[tuple[Message, ...]] = []

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        turn = len(self.inputs)
        self.inputs.append(tuple(messages))
        if turn < len(self.script) and self.script[turn] == TIMEOUT:
            raise PlannerTimeout("no answer in 0.1 s")
        return self.inner.plan(messages, tools, sampling=sampling)


def _run(script, device, device_ref, store, max_steps=12):
    planner = RecordingPlanner(script)
    traj = run_goal("Look at the alarms", device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox),
                    planner=planner, store=store, max_steps=max_steps)
    return traj, planner.inputs


# no two timeouts in a row: that ends the episode as infra, which the example below covers
scripts = st.lists(st.sampled_from(TURNS), min_size=1, max_size=10).filter(
    lambda s: all(not (a == TIMEOUT and b == TIMEOUT) for a, b in zip(s, s[1:])))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=scripts)
def test_messages_at_is_exactly_what_the_planner_was_given(script, device, device_ref, store):
    traj, inputs = _run(script, device, device_ref, store)
    assert len(traj.steps) == len(inputs)
    for i in range(len(traj.steps)):
        assert traj.messages_at(i) == inputs[i]
    stored = store.get(traj.id)
    assert [stored.messages_at(i) for i in range(len(stored.steps))] == inputs
    # what each step keeps is only its own turn's: the system prompt and goal once, then at
    # most the previous answer and its tool response
    assert stored.steps[0].messages == inputs[0] and [m.role for m in inputs[0]] == [Role.system, Role.user]
    assert all(s.messages_new and len(s.messages) <= 2 for s in stored.steps[1:])


def test_a_timed_out_turn_adds_nothing_and_two_in_a_row_end_the_episode(device, device_ref, store):
    traj, inputs = _run([{"name": "read_screen", "arguments": {}}, TIMEOUT, TIMEOUT], device, device_ref, store)
    assert traj.status.value == "infra_error" and len(traj.steps) == 3
    assert traj.steps[2].messages == () and traj.messages_at(2) == traj.messages_at(1) == inputs[2]


def test_storage_grows_linearly_with_the_episode(device, device_ref, store):
    traj, inputs = _run([{"name": "read_screen", "arguments": {}}] * 9, device, device_ref, store, max_steps=10)
    kept = sum(len(m.content) for s in traj.steps for m in s.messages)
    given_in_all = sum(len(m.content) for turn in inputs for m in turn)
    assert kept == sum(len(m.content) for m in inputs[-1])  # each message once
    assert given_in_all > 4 * kept  # what storing the whole input per step would have cost


def test_records_from_before_hold_the_whole_input_and_still_rebuild(device, device_ref, store):
    traj, inputs = _run([{"name": "read_screen", "arguments": {}}, {"name": "open_app", "arguments": {"app": "Clock"}}],
                        device, device_ref, store)
    # as the previous release wrote them: every step's whole input, no flag
    old = traj.model_copy(update={"steps": tuple(
        s.model_copy(update={"messages": inputs[i], "messages_new": False}) for i, s in enumerate(traj.steps))})
    again = type(old).from_json(old.to_json().replace(',"messages_new":false', ""))
    assert [again.messages_at(i) for i in range(len(again.steps))] == inputs
    # a replay copies old steps as a prefix and goes on with new ones: both rebuild
    mixed = traj.model_copy(update={"steps": old.steps[:2] + traj.steps[2:]})
    assert [mixed.messages_at(i) for i in range(len(mixed.steps))] == inputs
    with pytest.raises(IndexError):
        traj.messages_at(len(traj.steps))


def test_a_sub_agent_and_its_parent_each_rebuild_their_own_inputs(device, device_ref, store):
    from planner_runtime.tasks.spec import find_task

    task = find_task("subagent.save_number_as_new_contact")
    planner = RecordingPlanner([
        {"name": "delegate", "arguments": {"goal": "Find Grace Hopper's number in Contacts", "tools": ["open_app"], "budget": 3}},
        {"name": "open_app", "arguments": {"app": "Contacts"}},  # the sub-agent's turns
        {"name": "finish", "arguments": {"answer": "+1 555 0199"}},
        {"name": "add_contact", "arguments": {"name": "Admiral Hopper", "phone": "+1 555 0199"}},
        {"name": "finish", "arguments": {"answer": "Saved."}},
    ])
    parent = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox),
                      planner=planner, store=store, task=task)
    (child_id,) = store.children(parent.id)
    child = store.get(child_id)
    mine = [i for i in planner.inputs if "sub-agent" not in i[0].content]
    theirs = [i for i in planner.inputs if "sub-agent" in i[0].content]
    assert [parent.messages_at(i) for i in range(len(parent.steps))] == mine and len(mine) == 3
    assert [child.messages_at(i) for i in range(len(child.steps))] == theirs and len(theirs) == 2


class SlowOnTurn(RecordingPlanner):
    """Answers late on one turn: the episode's time runs out while it is answering."""

    def __init__(self, script, slow_turn: int, seconds: float) -> None:
        super().__init__(script)
        self.slow_turn, self.seconds = slow_turn, seconds

    def plan(self, messages, tools, *, sampling=None):
        turn = len(self.inputs)
        out = super().plan(messages, tools, sampling=sampling)
        if turn == self.slow_turn:
            time.sleep(self.seconds)
        return out


def test_the_step_an_episode_ran_out_of_time_on_rebuilds_its_input(device, device_ref, store):
    planner = SlowOnTurn([{"name": "read_screen", "arguments": {}}] * 3, slow_turn=2, seconds=2.0)
    traj = Episode(goal="Look around", planner=planner, tools=default_toolset(), ctx=ToolContext(device=device), store=store,
                   identity=EpisodeIdentity(device=device_ref), limits=EpisodeLimits(max_seconds=1.0)).run()
    assert traj.status.value == "truncated" and traj.steps[-1].feedback.error.code.value == "timeout"
    assert [traj.messages_at(i) for i in range(len(traj.steps))] == planner.inputs
