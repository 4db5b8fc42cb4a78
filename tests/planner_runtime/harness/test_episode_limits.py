"""Limits and the repeat guard on the virtual phone, through the real tool set and episode loop.

A side effect runs once however the call is dressed (a default argument spelt out) and however
many steps lie between; a sensitive one is never repeated; ``delegate`` is never refused. The
wall-time limit holds while the planner is still answering — a planner that sleeps through it,
a real HTTP endpoint that never answers, a sub-agent whose turn does — and the episode ends
``truncated`` near the limit, with a last step that says why.
"""

from __future__ import annotations

import socket
import time
from typing import Iterator, Sequence

import pytest

from device_farm.android import content_insert, content_query
from planner_runtime.contract import ErrorCode, FeedbackStatus, Message, ToolSpec, TrajectoryStatus
from planner_runtime.harness.episode import Episode, EpisodeLimits
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.harness.subagents import Lineage, with_delegate
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import find_task
from planner_runtime.harness.identity import EpisodeIdentity

SLACK_S = 2.5  # the episode may end this long after its limit: a second for the given-up turn to stop, the last write
READ = {"name": "read_screen", "arguments": {}}


def _call(tool: str, **arguments: object) -> dict:
    return {"name": tool, "arguments": arguments}


def _episode(planner, device, device_ref, store, *, gate=None, limits=EpisodeLimits(), delegate=False) -> Episode:
    tools, ctx = default_toolset(), ToolContext(device=device, gate=gate or SafetyGate())
    episode = Episode(goal="Do the task", planner=planner, tools=tools, ctx=ctx, store=store, identity=EpisodeIdentity(device=device_ref), limits=limits)
    if delegate:
        lineage = Lineage(planner=planner, store=store, identity=episode.identity, parent_id=episode.trajectory_id, limits=limits)
        episode.tools = with_delegate(tools, lineage)
    return episode


def _codes(traj) -> list[ErrorCode | None]:
    return [s.feedback.error.code if s.feedback.error else None for s in traj.steps]


def test_a_contact_is_saved_once_when_the_repeat_spells_out_a_default(device, device_ref, store):
    ada = {"name": "Ada Lovelace", "phone": "+1 555 0100"}
    script = [_call("add_contact", **ada), _call("add_contact", **ada, email=""), _call("finish", answer="saved")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store).run()

    saved = [r["display_name"] for r in content_query(device, "content://com.android.contacts/contacts")]
    assert saved.count("Ada Lovelace") == 1, saved
    assert _codes(traj) == [None, ErrorCode.repeated_action, None]
    assert "just succeeded" in traj.steps[1].feedback.error.hint


def test_an_identical_call_is_placed_once_even_with_steps_between(device, device_ref, store):
    gate = SafetyGate(policy=Policy(allow=frozenset({Sensitivity.call})))
    script = [_call("call", to="+15550100"), READ, _call("home"), _call("call", to="+15550100"), _call("finish", answer="called")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=gate).run()

    placed = [r["number"] for r in content_query(device, "content://call_log/calls") if r["type"] == "2"]
    assert placed == ["+15550100"]
    assert _codes(traj) == [None, None, None, ErrorCode.repeated_action, None]
    assert "already ran (step 0)" in traj.steps[3].feedback.error.hint
    assert [r.allowed for r in gate.log] == [True]  # the repeat never reached the gate


ALLOW_SENDING = SafetyGate(policy=Policy(allow=frozenset({Sensitivity.call, Sensitivity.send})))
CONTACTS = "content://com.android.contacts/raw_contacts"


def _save_contact(device, name: str, **values: str) -> None:
    device.shell(["content", "delete", "--uri", CONTACTS])
    content_insert(device, CONTACTS, {"display_name": name, **values})


def test_a_number_is_called_once_however_it_is_written(device, device_ref, store):
    _save_contact(device, "Ada Lovelace", phone="+1 555 0123")
    device.shell(["content", "delete", "--uri", "content://call_log/calls"])
    variants = ["+15550123", "+15550123 ", "+1 555 0123", "Ada Lovelace", " (+1) 555-0123"]
    script = [_call("call", to=to) for to in variants] + [_call("finish", answer="called")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=ALLOW_SENDING).run()

    placed = [r["number"] for r in content_query(device, "content://call_log/calls") if r["type"] == "2"]
    assert placed == ["+15550123"]
    assert _codes(traj) == [None] + [ErrorCode.repeated_action] * 4 + [None]
    assert "already ran (step 0)" in traj.steps[3].feedback.error.hint


def test_a_text_to_a_contact_is_sent_once_by_name_or_number(device, device_ref, store):
    _save_contact(device, "Ada Lovelace", phone="+1 555 0123")
    device.shell(["content", "delete", "--uri", "content://sms"])
    script = [_call("send_message", to="Ada Lovelace", text="On my way"), _call("send_message", to="+15550123", text="On my way "),
              _call("send_message", to="+1 555 0123", text="On my way"), _call("finish", answer="sent")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=ALLOW_SENDING).run()

    sent = [r["body"] for r in content_query(device, "content://sms/sent", projection=["address", "body"])]
    assert sent == ["On my way"]
    assert _codes(traj) == [None, ErrorCode.repeated_action, ErrorCode.repeated_action, None]


def test_an_email_to_a_contact_is_sent_once_by_name_or_address(device, device_ref, store):
    _save_contact(device, "Grace Hopper", email="grace@navy.example")
    mail = "content://com.google.android.gm/messages"
    device.shell(["content", "delete", "--uri", mail])
    script = [_call("send_email", to="Grace Hopper", subject="Talk", body="Thursday"),
              _call("send_email", to=" Grace@Navy.example", subject="Talk", body="Thursday"), _call("finish", answer="sent")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=ALLOW_SENDING).run()

    sent = content_query(device, mail, where="folder='sent'")
    assert len(sent) == 1, sent
    assert _codes(traj) == [None, ErrorCode.repeated_action, None]


def test_money_is_sent_once_however_the_recipient_is_spelt(device, device_ref, store):
    seed(find_task("payments.send_money"), device)
    pay = {"amount": 20.0, "note": "concert tickets"}
    script = [_call("send_money", to="Maria Garcia", **pay), _call("send_money", to="maria  garcia ", amount=20, note="concert tickets "),
              _call("finish", answer="sent")]
    gate = SafetyGate(policy=Policy(allow=frozenset({Sensitivity.pay})))
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=gate).run()

    sent = content_query(device, "content://com.paypal.android.p2pmobile.provider/transactions", where="counterparty='Maria Garcia'")
    assert len(sent) == 1, sent
    assert _codes(traj) == [None, ErrorCode.repeated_action, None]


def test_a_different_number_is_still_called(device, device_ref, store):
    device.shell(["content", "delete", "--uri", "content://call_log/calls"])
    script = [_call("call", to="+15550123"), _call("call", to="+15550124"), _call("finish", answer="called both")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=ALLOW_SENDING).run()

    placed = [r["number"] for r in content_query(device, "content://call_log/calls", sort="_id") if r["type"] == "2"]
    assert placed == ["+15550123", "+15550124"]
    assert _codes(traj) == [None, None, None]


def test_identical_delegate_calls_all_run(device, device_ref, store):
    lookup = _call("delegate", goal="Read the screen and report the app in front", tools=["read_screen"], budget=2)
    child = [READ, _call("finish", answer="home screen")]
    script = [lookup, *child, lookup, *child, lookup, *child, _call("finish", answer="looked three times")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, delegate=True).run()

    assert traj.status is TrajectoryStatus.finished
    assert [s.tool_call.name for s in traj.steps] == ["delegate"] * 3 + ["finish"]
    assert _codes(traj) == [None] * 4
    children = {s.feedback.result["trajectory"] for s in traj.steps[:3]}
    assert len(children) == 3 and all(store.get(c).parent == traj.id for c in children)


def test_a_sub_agent_cannot_repeat_a_call_its_parent_placed(device, device_ref, store):
    gate = SafetyGate(policy=Policy(allow=frozenset({Sensitivity.call})))
    ring = _call("call", to="+15550100")
    script = [ring, _call("delegate", goal="Call +15550100", tools=["call"], budget=2), ring, _call("finish", answer="x"),
              _call("finish", answer="called")]
    traj = _episode(ScriptedPlanner(script), device, device_ref, store, gate=gate, delegate=True).run()

    placed = [r["number"] for r in content_query(device, "content://call_log/calls") if r["type"] == "2"]
    assert placed == ["+15550100"]
    child = store.get(traj.steps[1].feedback.result["trajectory"])
    assert child.steps[0].feedback.error.code is ErrorCode.repeated_action


def test_a_screen_call_repeats_at_most_twice_on_an_unchanged_screen(device, device_ref, store):
    pause = _call("wait", seconds=0.1)
    traj = _episode(ScriptedPlanner([pause, pause, pause, _call("finish", answer="waited")]), device, device_ref, store).run()
    assert _codes(traj) == [None, None, ErrorCode.repeated_action, None]
    assert "already ran 2 times on this screen" in traj.steps[2].feedback.error.hint


class _SleepsOnTurn:
    """Answers from a script, but sleeps through turn ``slow`` (a planner that ignores deadlines)."""

    name, release = "sleepy", "sleepy"

    def __init__(self, script: Sequence[dict], slow: int, seconds: float) -> None:
        self.inner, self.slow, self.seconds, self.turn = ScriptedPlanner(script), slow, seconds, 0

    def plan(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None) -> PlannerOutput:
        self.turn += 1
        if self.turn == self.slow:
            time.sleep(self.seconds)
        return self.inner.plan(messages, tools, sampling=sampling)


def _assert_ended_at_the_limit(traj, started: float, limit: float) -> None:
    took = time.monotonic() - started
    assert traj.status is TrajectoryStatus.truncated
    assert limit <= took < limit + SLACK_S, took
    last = traj.steps[-1]
    assert last.feedback.error.code is ErrorCode.timeout and last.feedback.note == "episode time limit"
    assert "time limit" in last.feedback.error.hint


def test_a_planner_turn_that_outlasts_the_limit_ends_the_episode_at_the_limit(device, device_ref, store):
    planner = _SleepsOnTurn([READ, _call("add_contact", name="Late Larry")], slow=2, seconds=6)
    started = time.monotonic()
    traj = _episode(planner, device, device_ref, store, limits=EpisodeLimits(max_seconds=1.5)).run()

    _assert_ended_at_the_limit(traj, started, 1.5)
    assert [s.tool_call.name if s.tool_call else None for s in traj.steps] == ["read_screen", None]
    assert store.get(traj.id).status is TrajectoryStatus.truncated
    time.sleep(5)  # the late answer arrives now and must not be run
    names = [r["display_name"] for r in content_query(device, "content://com.android.contacts/contacts")]
    assert "Late Larry" not in names


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A loopback port that takes connections and requests and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)  # the kernel completes the handshakes; nobody ever reads or replies
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def test_an_endpoint_that_never_answers_ends_the_episode_at_the_limit(silent_endpoint, device, device_ref, store):
    with OpenAIPlanner(silent_endpoint, "m", timeout=60, max_retries=0) as planner:
        started = time.monotonic()
        traj = _episode(planner, device, device_ref, store, limits=EpisodeLimits(max_seconds=1.5)).run()
    _assert_ended_at_the_limit(traj, started, 1.5)
    assert len(traj.steps) == 1 and "no answer came in time" in traj.steps[0].feedback.error.hint


def test_a_sub_agent_ends_at_its_parents_limit(device, device_ref, store):
    script = [_call("delegate", goal="Read the screen", tools=["read_screen"], budget=4), READ, READ]
    planner = _SleepsOnTurn(script, slow=3, seconds=6)  # the child's second turn
    started = time.monotonic()
    traj = _episode(planner, device, device_ref, store, limits=EpisodeLimits(max_seconds=2.0), delegate=True).run()

    assert traj.status is TrajectoryStatus.truncated and time.monotonic() - started < 2.0 + SLACK_S
    delegated = traj.steps[0].feedback
    assert delegated.status is FeedbackStatus.ok and delegated.result["status"] == "truncated"
    child = store.get(delegated.result["trajectory"])
    assert child.steps[-1].feedback.note == "episode time limit"
