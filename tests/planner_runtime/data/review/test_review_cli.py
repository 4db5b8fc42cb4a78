"""``planner-agent review flag|list|show|decide``: what a person at the terminal sees, the JSON
for scripts, and exit 2 with one line for each mistake (nothing decided)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planner_runtime.cli.main import app
from planner_runtime.contract import (
    DeviceRef, ErrorCode, Feedback, FeedbackStatus, Message, Role, Source, Step, ToolCall, ToolError, Trajectory, TrajectoryStatus,
    Usage, Verdict,
)
from planner_runtime.data.review import queue
from planner_runtime.trajectories.store import TrajectoryStore

runner = CliRunner()


@pytest.fixture
def store_path(tmp_path):
    """A store with one episode whose payment the gate stopped (the planner's answer is hostile text)."""
    path = tmp_path / "t.sqlite"
    call = ToolCall(name="pay_bill", arguments={"amount": 40}, call_id="c1")
    blocked = Feedback(call_id="c1", status=FeedbackStatus.blocked,
                       error=ToolError(code=ErrorCode.unsafe_action, hint="pay_bill was not run: pay actions need the user's confirmation"))
    with TrajectoryStore(path) as store:
        store.begin(Trajectory(id="t-pay", task_id="bills.pay", goal="pay the bill", source=Source.sandbox,
                               device=DeviceRef(serial="s"), planner="scripted"))
        store.append_step("t-pay", Step(index=0, messages=(Message(role=Role.user, content="pay"),), raw_output="[red]x[/red]",
                                        tool_call=call, feedback=blocked))
        store.end("t-pay", TrajectoryStatus.finished, answer="paid", usage=Usage())
        store.set_verdict("t-pay", Verdict(success=True, score=1.0))
    return path


def cli(*args: str):
    return runner.invoke(app, ["review", *args])


def test_flag_list_show_decide_from_the_terminal(store_path):
    s = str(store_path)
    flagged = cli("flag", "--store", s, "--json")
    assert flagged.exit_code == 0, flagged.output
    added = json.loads(flagged.stdout)["added"]
    assert [(i["trajectory_id"], i["reason"]) for i in added] == [("t-pay", "safety")]
    item = added[0]["id"]
    assert "0 item(s) added; 1 flag(s) were queued already" in cli("flag", "--store", s).stdout

    listed = cli("list", "--store", s, "--reason", "safety", "--status", "open")
    assert listed.exit_code == 0 and item in listed.stdout and "0/1" in listed.stdout
    assert json.loads(cli("list", "--store", s, "--status", "resolved", "--json").stdout) == []

    shown = cli("show", item, "--store", s)
    assert shown.exit_code == 0
    assert "pay_bill" in shown.stdout and "blocked unsafe_action" in shown.stdout and "step 1" in shown.stdout

    first = cli("decide", item, "--relabel", "failure", "--note", "it never paid", "--by", "alice", "--store", s)
    assert first.exit_code == 0 and "1 review(s) so far, 2 agreeing needed: it waits for another reviewer" in first.stdout
    again = cli("decide", item, "--relabel", "failure", "--by", "alice", "--store", s)
    assert again.exit_code == 2 and "alice already reviewed item" in again.stderr
    second = cli("decide", item, "--relabel", "failure", "--by", "bob", "--store", s, "--json")
    assert second.exit_code == 0 and json.loads(second.stdout)["resolved"] is True
    late = cli("decide", item, "--approve", "--by", "carol", "--store", s)
    assert late.exit_code == 2 and "already resolved (relabel as failure" in late.stderr

    detail = json.loads(cli("show", item, "--store", s, "--json").stdout)
    assert [(d["reviewer"], d["decision"], d["label_success"], d["note"]) for d in detail["decisions"]] == [
        ("alice", "relabel", False, "it never paid"), ("bob", "relabel", False, "")]
    assert detail["item"]["status"] == "resolved" and detail["trajectory"]["id"] == "t-pay"


@pytest.mark.parametrize("args, message", [
    (["decide", "rev_nope", "--approve", "--by", "a"], "no review item 'rev_nope'"),
    (["decide", "ITEM", "--approve", "--reject", "--by", "a"], "give exactly one of --approve, --reject, --relabel"),
    (["decide", "ITEM", "--relabel", "maybe", "--by", "a"], "--relabel 'maybe': give success or failure"),
    (["decide", "ITEM", "--approve", "--by", " "], "a reviewer name is required"),
    (["list", "--reason", "boredom"], "unknown reason 'boredom'"),
    (["list", "--status", "closed"], "unknown status 'closed'"),
    (["show", "rev_nope"], "no review item 'rev_nope'"),
])
def test_each_mistake_is_one_line_and_exit_2(store_path, args, message):
    with TrajectoryStore(store_path) as store:
        item = queue.add(store, "t-pay", "safety").id
    res = cli(*[item if a == "ITEM" else a for a in args], "--store", str(store_path))
    assert res.exit_code == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output
    with TrajectoryStore(store_path) as store:
        assert queue.decisions(store) == []


def test_a_missing_store_is_exit_2_and_not_created(tmp_path):
    res = cli("list", "--store", str(tmp_path / "nope.sqlite"))
    assert res.exit_code == 2 and "no trajectory store at" in res.stderr
    assert not (tmp_path / "nope.sqlite").exists()
