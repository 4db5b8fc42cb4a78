"""Detour demos: a demo opened with the wrong guess a planner makes when it skips a lookup. The
guess is taken from the goal, the tool refuses it, the demo recovers, and the refused turn never
becomes a training target; an accepted guess ends the episode at once, unverified."""

from __future__ import annotations

import json
import subprocess
import sys

from planner_runtime.contract import Message, Role, ToolCall
from planner_runtime.planners.demo import GUESS_ACCEPTED, DemoPlanner
from planner_runtime.tasks.detours import detour
from planner_runtime.tasks.spec import find_task
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training.data import trained

LOOKUP = ToolCall(name="ride_history", arguments={"status": "requested"})
CANCEL = ToolCall(name="ride_cancel", arguments={"ride": "RD-0861"})
FINISH = ToolCall(name="finish", arguments={"answer": "Your ride to Airport is cancelled"})
GOAL = "Cancel my taxi to Airport, I don't need it anymore"


def test_the_guess_is_a_goal_value_where_the_demo_uses_a_looked_up_one():
    wrong = detour([LOOKUP, CANCEL, FINISH], GOAL, {"dropoff": "Airport", "count": 2})
    assert (wrong.name, wrong.arguments) == ("ride_cancel", {"ride": "Airport"})


def test_no_detour_where_nothing_is_looked_up_guessed_or_delegated():
    alarm = [ToolCall(name="set_alarm", arguments={"hour": 7, "minutes": 30}), FINISH]
    assert detour(alarm, "Set an alarm for 7:30", {"hour": 7}) is None  # one call, nothing before it
    said = [LOOKUP, ToolCall(name="ride_cancel", arguments={"ride": "Airport"}), FINISH]
    assert detour(said, GOAL, {"dropoff": "Airport"}) is None  # the value is in the goal already
    assert detour([LOOKUP, CANCEL, FINISH], GOAL, {"dropoff": "Paris"}) is None  # no goal value to guess with
    text = [LOOKUP, ToolCall(name="send_message", arguments={"to": "Airport", "text": "On my way"}), FINISH]
    assert detour(text, GOAL, {"dropoff": "Airport"}) is None  # a written text is not looked up
    delegated = [ToolCall(name="delegate", arguments={"goal": "find the ride", "tools": ["ride_history"]}), LOOKUP, CANCEL, FINISH]
    assert detour(delegated, GOAL, {"dropoff": "Airport"}) is None


def _tool(status: str) -> Message:
    return Message(role=Role.tool, content=json.dumps({"status": status}) + "\nIf the goal is now reached, call finish.", tool_call_id="c")


def _calls(planner: DemoPlanner, answers: list[Message]) -> list[str]:
    messages = [Message(role=Role.user, content=GOAL)]
    names = []
    for answer in [None, *answers]:
        if answer is not None:
            messages.append(answer)
        out = planner.plan(messages, [])
        names.append(out.tool_calls[0].name)
        if out.tool_calls[0].name == "finish":
            return names + [out.tool_calls[0].arguments["answer"]]
    return names


def test_after_a_refused_guess_the_demo_plays_and_after_an_accepted_one_the_episode_finishes():
    guess = ToolCall(name="ride_cancel", arguments={"ride": "Airport"})
    refused = DemoPlanner([LOOKUP, CANCEL, FINISH], detour=guess)
    assert _calls(refused, [_tool("error"), _tool("ok"), _tool("ok")]) == ["ride_cancel", "ride_history", "ride_cancel", "finish", FINISH.arguments["answer"]]
    accepted = DemoPlanner([LOOKUP, CANCEL, FINISH], detour=guess)
    assert _calls(accepted, [_tool("ok")]) == ["ride_cancel", "finish", GUESS_ACCEPTED]
    plain = DemoPlanner([LOOKUP, CANCEL, FINISH])  # no detour: the demo as written, whatever the feedback
    assert _calls(plain, [_tool("ok"), _tool("ok")]) == ["ride_history", "ride_cancel", "finish", FINISH.arguments["answer"]]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "collect", *args], capture_output=True, text=True, timeout=240)


def test_collect_with_detours_recovers_on_the_phone_and_trains_only_the_recovery(tmp_path):
    store = tmp_path / "t.sqlite"
    place = ["--store", str(store), "--state-dir", str(tmp_path / "pool"), "-n", "2", "--json"]
    res = cli("--planner", "demo", "--detours", "--task", "rides.cancel_ride", "--task", "clock.set_alarm", *place)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["succeeded"] == 1 and json.loads(res.stdout)["failed"] == 0  # the alarm's demo looks nothing up
    with TrajectoryStore(store, create=False) as db:
        (trajectory_id,) = db.ids()
        traj = db.get(trajectory_id)
    assert traj.task_id == "rides.cancel_ride" and traj.verdict.success and traj.planner_release == "demo+detour"
    calls = [(s.tool_call.name, s.tool_call.arguments, s.feedback.status.value) for s in traj.steps]
    ride = find_task("rides.cancel_ride").rendered_demo()[1].arguments["ride"]
    assert calls[:3] == [("ride_cancel", {"ride": "Airport"}, "error"), ("ride_history", {"status": "requested"}, "ok"),
                         ("ride_cancel", {"ride": ride}, "ok")]
    assert traj.steps[0].feedback.error.hint.endswith("ride_history lists them with their details")  # the refusal names the lookup
    assert [trained(s) for s in traj.steps] == [False, True, True, True]  # the guess is context, never a target


def test_detours_need_demos_with_a_lookup_or_say_so_in_one_line(tmp_path):
    place = ["--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool")]
    for args, said in ((["--planner", "scripted", "--task", "rides.cancel_ride"], "--detours opens each task's demo with a wrong guess: give --planner demo"),
                       (["--planner", "demo", "--task", "clock.set_alarm"], "--detours: no chosen task's demo looks a value up"),
                       (["--planner", "demo", "--task", "rides.cancel_ride", "--adb", "127.0.0.1:5037", "--allow-reset"],
                        "--detours makes wrong calls on purpose: virtual phones only")):
        res = cli(*args, "--detours", *place)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert said in " ".join(res.stderr.split())
    assert not (tmp_path / "t.sqlite").exists()
