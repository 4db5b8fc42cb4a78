"""Replay on the virtual phone: recorded calls re-run and compared; re-planning from step k."""

from __future__ import annotations

import json
import subprocess
import sys

from device_farm.adb.server import free_port
from planner_runtime.contract import FailureKind
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.replay import reexecute, replan
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity
from tests.planner_runtime.test_end_to_end import _learn_switch

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.disable_alarm_gui")


def _record(device, device_ref, store, time_text):
    switch = _learn_switch(TASK, device, time_text)
    script = [
        "no call here",  # answered by the harness, nothing to re-run
        {"name": "open_app", "arguments": {"app": "Clock"}},
        {"name": "tap", "arguments": {"element": switch}},
        {"name": "finish", "arguments": {"answer": "done"}},
    ]
    return run_goal(TASK.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=TASK)


def test_reexecute_reproduces_a_recorded_episode(device, device_ref, store):
    traj = _record(device, device_ref, store, "6:15")
    assert traj.verdict.success
    report = reexecute(traj, device, TASK)
    assert report.steps_replayed == 3 and report.divergence is None
    assert report.verdict.success


def test_reexecute_reports_the_first_step_that_differs(device, device_ref, store):
    traj = _record(device, device_ref, store, "6:15")
    device.shell(["content", "delete", "--uri", "content://com.android.deskclock/alarms"])
    report = reexecute(traj, device, task=None)  # not re-seeded: the Clock screen has no alarms now
    assert report.divergence is not None
    assert (report.divergence.step, report.divergence.what) == (1, "screen")


def test_replan_from_a_step_with_another_planner_fixes_a_failure(device, device_ref, store):
    failed = _record(device, device_ref, store, "8:00")  # tapped the wrong alarm's switch
    assert not failed.verdict.success
    right = _learn_switch(TASK, device, "6:15")
    fixed = replan(
        failed, 2,
        planner=ScriptedPlanner([{"name": "tap", "arguments": {"element": right}}, {"name": "finish", "arguments": {"answer": "off"}}]),
        device=device, identity=EpisodeIdentity(device=device_ref), store=store, task=TASK,
    )
    assert fixed.id != failed.id and fixed.verdict.success
    assert fixed.steps[:2] == failed.steps[:2]  # the replayed prefix is kept as recorded
    assert [s.index for s in fixed.steps] == [0, 1, 2, 3]
    assert fixed.messages_at(2) == failed.messages_at(2)  # the new planner saw the same input
    assert store.get(failed.id).verdict.success is False  # the original is untouched


def replay_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "replay", *args], capture_output=True, text=True, timeout=240)


def _alarms(phone) -> str:
    return phone.device.shell("content query --uri content://com.android.deskclock/alarms")


def test_replay_on_a_phone_that_is_not_virtual_needs_allow_reset(device, device_ref, store, virtual_phone):
    traj = _record(device, device_ref, store, "6:15")
    before = _alarms(virtual_phone)
    where = ["--serial", virtual_phone.serial, "--adb", f"{virtual_phone.adb.host}:{virtual_phone.adb.port}", "--store", str(store.path)]
    res = replay_cli(traj.id, *where)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "--allow-reset" in " ".join(res.stderr.split())
    assert _alarms(virtual_phone) == before  # not re-seeded

    allowed = replay_cli(traj.id, *where, "--allow-reset", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["reproduced"] is True and "warning" in allowed.stderr


def test_replay_exit_status_follows_the_outcome_and_json_is_only_json(device, device_ref, store, tmp_path):
    failed = _record(device, device_ref, store, "8:00")  # the wrong alarm's switch: a failed verdict
    dead = f"127.0.0.1:{free_port()}"  # no adb server: the built-in phone
    same = replay_cli(failed.id, "--adb", dead, "--store", str(store.path), "--json")
    assert same.returncode == 0, same.stderr  # reproduced, whatever its verdict
    report = json.loads(same.stdout)
    assert (report["reproduced"], report["success"], report["steps_replayed"]) == (True, False, 3)

    finish = tmp_path / "finish.json"
    finish.write_text(json.dumps([{"name": "finish", "arguments": {"answer": "done"}}]))
    again = replay_cli(failed.id, "--from-step", "2", "--planner", "scripted", "--script", str(finish), "--adb", dead,
                       "--store", str(store.path), "--json")
    assert again.returncode == 1, again.stdout + again.stderr  # the re-planned episode did not succeed either
    assert json.loads(again.stdout)["success"] is False, repr(again)


def test_replay_never_creates_a_mistyped_store(tmp_path):
    typo = tmp_path / "typo.sqlite"
    res = replay_cli("traj_x", "--store", str(typo), "--adb", f"127.0.0.1:{free_port()}")
    assert res.returncode == 2 and "no trajectory store at" in " ".join(res.stderr.split()), res.stderr
    assert not typo.exists()


def test_a_step_the_trajectory_does_not_have_is_refused_before_a_phone_starts(device, device_ref, store, tmp_path):
    traj = _record(device, device_ref, store, "6:15")
    finish = tmp_path / "finish.json"
    finish.write_text(json.dumps([{"name": "finish", "arguments": {"answer": "done"}}]))
    res = replay_cli(traj.id, "--from-step", "99", "--planner", "scripted", "--script", str(finish),
                     "--adb", f"127.0.0.1:{free_port()}", "--store", str(store.path))
    assert res.returncode == 2, res.stdout + res.stderr
    said = " ".join(res.stderr.split())
    assert f"--from-step must be 0..{len(traj.steps) - 1} for {traj.id}" in said and "Traceback" not in said
    assert "virtual phone" not in said  # no phone was started for nothing
    assert len(list(store.ids())) == 1  # nor a trajectory stored


def test_replay_failed_leaves_out_trajectories_an_infra_fault_failed(device, device_ref, store):
    planners_fault = _record(device, device_ref, store, "8:00")  # the wrong switch: the planner's failure
    spoiled = _record(device, device_ref, store, "8:00")
    store.set_verdict(spoiled.id, spoiled.verdict.model_copy(update={"failure_kind": FailureKind.infra}))  # judged an infra fault
    assert planners_fault.verdict.success is False and store.get(spoiled.id).verdict.failure_kind is FailureKind.infra
    res = replay_cli("--failed", "--adb", f"127.0.0.1:{free_port()}", "--store", str(store.path), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert [json.loads(line)["trajectory"] for line in res.stdout.splitlines()] == [planners_fault.id]
