"""``planner-agent collect`` run as a user runs it (a subprocess) on virtual phones: what a resume
restores, what it refuses, Ctrl-C, exit statuses, ``--json``, and phones that must not be wiped."""

from __future__ import annotations

import json
import shlex
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from device_farm.adb.server import free_port

ALARM = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "ok"}}]


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=timeout)


def _no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr


def _said(res: subprocess.CompletedProcess[str]) -> str:
    """stderr with the console's line wrapping undone."""
    return " ".join(res.stderr.split())


@pytest.fixture
def scripted(tmp_path):
    """Options of a small scripted collection (its store and pool records in ``tmp_path``)."""
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps({"clock.set_alarm": ALARM}))
    return ["--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm", "--task", "contacts.add_contact"]


def _place(tmp_path) -> list[str]:
    return ["--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "2"]


def _items(tmp_path, coll: str) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        return db.execute("SELECT item, status, failure_kind FROM trajectories WHERE collection = ?", (coll,)).fetchall()


def test_json_prints_only_the_counts_and_resume_restores_the_collection(tmp_path, scripted):
    first = cli("collect", *scripted, "-k", "2", *_place(tmp_path), "--json")
    assert first.returncode == 0, first.stderr  # failed verdicts are results, not a failed job
    counts = json.loads(first.stdout)  # nothing but JSON on stdout; the progress bar is on stderr
    assert (counts["total"], counts["succeeded"] + counts["failed"], counts["gave_up"]) == (4, 4, [])
    coll = counts["collection"]

    # only the id: the suite, the two tasks, two repeats, the scripted planner and its script come from the store
    again = cli("collect", "--resume", coll, *_place(tmp_path), "--json", timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {**counts, "succeeded": 0, "failed": 0, "skipped": 4}
    assert len(_items(tmp_path, coll)) == 4

    grown = cli("collect", "--resume", coll, "-k", "3", *_place(tmp_path), "--json")  # more repeats add items
    assert grown.returncode == 0, grown.stderr
    more = json.loads(grown.stdout)
    assert (more["total"], more["skipped"], more["succeeded"] + more["failed"]) == (6, 4, 2)
    assert sorted(i for i, _, _ in _items(tmp_path, coll)) == sorted(f"{t}#{r}" for t in ("clock.set_alarm", "contacts.add_contact") for r in range(3))


def test_resume_refuses_options_that_contradict_the_collection(tmp_path, scripted):
    first = cli("collect", *scripted, "-k", "2", *_place(tmp_path), "--json")
    coll = json.loads(first.stdout)["collection"]
    for changed, flag in ((["--planner", "openai://127.0.0.1:1/other"], "--planner"), (["-k", "1"], "--repeat"),
                          (["--task", "clock.set_alarm"], "--task"), (["--max-steps", "3"], "--max-steps")):
        res = cli("collect", "--resume", coll, *changed, *_place(tmp_path))
        assert res.returncode == 2, (changed, res.stdout, res.stderr)
        _no_traceback(res)
        assert flag in _said(res) and "differs from what this collection was started with" in _said(res)
    assert len(_items(tmp_path, coll)) == 4  # nothing ran


def test_resume_runs_the_suite_and_script_it_started_with_though_the_files_changed_or_went(tmp_path):
    from planner_runtime.tasks.spec import SUITES_DIR

    suite, calls = tmp_path / "suite.yaml", tmp_path / "calls.json"
    suite.write_text((SUITES_DIR / "skeleton.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    calls.write_text(json.dumps({"clock.set_alarm": ALARM}))
    first = cli("collect", "--suite", str(suite), "--task", "clock.set_alarm", "--planner", "scripted", "--script", str(calls),
                *_place(tmp_path), "--json")
    assert first.returncode == 0, first.stderr
    coll = json.loads(first.stdout)["collection"]
    assert json.loads(first.stdout)["succeeded"] == 1

    wrong = [{"name": "set_alarm", "arguments": {"hour": 9, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "ok"}}]
    calls.write_text(json.dumps({"clock.set_alarm": wrong}))  # edited between the stop and the resume
    edited = cli("collect", "--resume", coll, "-k", "2", *_place(tmp_path), "--json")
    assert edited.returncode == 0, edited.stderr
    assert (json.loads(edited.stdout)["succeeded"], json.loads(edited.stdout)["failed"]) == (1, 0)  # the recorded calls ran

    refused = cli("collect", "--resume", coll, "-k", "3", "--script", str(calls), *_place(tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    _no_traceback(refused)
    assert f"--script {calls} has changed since this collection was started" in _said(refused)

    suite.unlink()
    calls.unlink()  # gone: the resume does not need them
    gone = cli("collect", "--resume", coll, "-k", "3", *_place(tmp_path), "--json")
    assert gone.returncode == 0, gone.stderr
    assert (json.loads(gone.stdout)["succeeded"], json.loads(gone.stdout)["skipped"]) == (1, 2)


def test_an_unknown_collection_or_store_is_a_usage_error(tmp_path, scripted):
    cli("collect", *scripted, *_place(tmp_path))
    res = cli("collect", "--resume", "coll_nosuchthing", *_place(tmp_path))
    assert res.returncode == 2 and "no collection 'coll_nosuchthing'" in _said(res), res.stderr
    typo = tmp_path / "typo.sqlite"
    res = cli("collect", "--resume", "coll_nosuchthing", "--store", str(typo))
    assert res.returncode == 2 and "no trajectory store at" in _said(res), res.stderr
    assert not typo.exists()


@pytest.mark.parametrize("selection, said", [(["--task", "nope"], "no task 'nope'"),
                                              (["--task", "clock.set_alarm", "--split", "test"], "no task matches")])
def test_a_selection_of_no_task_is_refused_before_a_store_is_made(tmp_path, selection, said):
    store = tmp_path / "new.sqlite"
    res = cli("collect", *selection, "--planner", "scripted", "--store", str(store), "--state-dir", str(tmp_path / "pool"))
    assert res.returncode == 2, res.stdout + res.stderr
    _no_traceback(res)
    assert said in _said(res)
    assert not store.exists()


def test_a_scripted_collection_without_a_script_is_refused(tmp_path):
    store = tmp_path / "new.sqlite"
    res = cli("collect", "--task", "clock.set_alarm", "--planner", "scripted", "--store", str(store), "--state-dir", str(tmp_path / "pool"))
    assert res.returncode == 2, res.stdout + res.stderr
    _no_traceback(res)
    assert "--planner scripted needs --script" in _said(res)
    assert not store.exists()


@pytest.mark.parametrize("bad", [["-n", "0"], ["-k", "0"], ["--max-steps", "0"], ["--planner-timeout", "0"]])
def test_nonsense_values_are_refused(tmp_path, scripted, bad):
    res = cli("collect", *scripted, *_place(tmp_path), *bad)
    assert res.returncode == 2, res.stdout + res.stderr
    _no_traceback(res)
    assert not (tmp_path / "t.sqlite").exists()


def test_ctrl_c_prints_the_resume_command_and_the_rest_runs_once(tmp_path):
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps({"clock.set_alarm": ALARM}))
    args = ["collect", "--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm", "-k", "40",
            "--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "1"]
    proc = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _judged(tmp_path) < 2:
            time.sleep(0.2)
        assert _judged(tmp_path) >= 2
        proc.send_signal(signal.SIGINT)
        out, errors = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, errors
    assert "Traceback" not in errors
    command = next(line.strip() for line in errors.splitlines() if line.strip().startswith("planner-agent collect --resume"))
    words = shlex.split(command)
    coll = words[3]
    assert _judged(tmp_path) < 40  # it did stop early

    res = cli(*words[1:], "--json")  # the printed command, as the user would paste it
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["collection"] == coll
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        judged = [item for (item,) in db.execute(
            "SELECT item FROM trajectories WHERE success IS NOT NULL AND failure_kind IS NOT 'infra'")]
    # every item judged once, none twice (one cut off before its verdict, or by its phone
    # stopping as the process exited, ran again)
    assert sorted(judged) == sorted(f"clock.set_alarm#{r}" for r in range(40))


def _statuses(tmp_path) -> list[str]:
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        try:
            return [s for (s,) in db.execute("SELECT status FROM trajectories")]
        except sqlite3.OperationalError:  # the tables are not there yet
            return []


def test_ctrl_c_stores_running_episodes_as_interrupted_at_once_and_exits_cleanly(tmp_path):
    slow = [{"name": "wait", "arguments": {"seconds": 3}}] * 8 + ALARM  # an episode of about 24 s
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps({"clock.set_alarm": slow}))
    args = ["collect", "--planner", "scripted", "--script", str(scripts), "--task", "clock.set_alarm", "-k", "4",
            "--max-steps", "20", "--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _statuses(tmp_path).count("running") < 2:
            time.sleep(0.1)
        assert _statuses(tmp_path).count("running") == 2
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 2.5  # well before the 3 s waits under way end
        while time.monotonic() < deadline and "running" in _statuses(tmp_path):
            time.sleep(0.05)
        assert _statuses(tmp_path) == ["interrupted", "interrupted"]  # at once, not at the next --resume
        out, errors = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, errors
    assert "terminate called" not in errors and "Traceback" not in errors, errors
    assert "2 running episodes stored as interrupted" in " ".join(errors.split())
    assert _statuses(tmp_path) == ["interrupted", "interrupted"]  # the episodes ended there, not as infra faults


def test_an_interrupt_counts_the_episodes_that_ended_themselves_as_interrupted_as_it_stores_the_running_ones(tmp_path):
    from planner_runtime.contract import DeviceRef, Source, Trajectory, TrajectoryStatus, Usage
    from planner_runtime.runs.collect import _mark_interrupted
    from planner_runtime.trajectories.store import TrajectoryStore

    def episode(store, status):  # noqa: ANN001, ANN202
        traj = Trajectory(goal="g", task_id="t", source=Source.sandbox, device=DeviceRef(serial="emulator-5554"), planner="scripted")
        store.begin(traj)
        if status is not TrajectoryStatus.running:
            store.end(traj.id, status, answer=None, usage=Usage())
        return traj.id

    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        running, ended_itself, finished = (episode(store, s) for s in
                                           (TrajectoryStatus.running, TrajectoryStatus.interrupted, TrajectoryStatus.finished))
        # the stop came as the second episode's turn ended: it refused the next turn and stored itself first
        assert _mark_interrupted(store, [running, ended_itself, finished, "traj_not_begun"]) == [running, ended_itself]
        assert [store.get(i).status for i in (running, ended_itself, finished)] == [
            TrajectoryStatus.interrupted, TrajectoryStatus.interrupted, TrajectoryStatus.finished]


def _judged(tmp_path) -> int:
    if not (tmp_path / "t.sqlite").exists():
        return 0
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        try:
            return db.execute("SELECT count(*) FROM trajectories WHERE success IS NOT NULL").fetchone()[0]
        except sqlite3.OperationalError:  # the tables are not there yet
            return 0


def test_a_planner_endpoint_that_is_down_is_infra_not_an_agent_failure(tmp_path):
    down = f"openai://127.0.0.1:{free_port()}/planner"
    res = cli("collect", "--planner", down, "--planner-timeout", "1", "--task", "clock.set_alarm", "--max-steps", "2",
              *_place(tmp_path), "--json")
    _no_traceback(res)
    assert res.returncode == 3, res.stdout + res.stderr
    counts = json.loads(res.stdout)
    assert counts["gave_up"] == ["clock.set_alarm#0"] and counts["failed"] == 0 and counts["infra_retried"] >= 2
    assert "given up after repeated infra failures" in _said(res)
    rows = _items(tmp_path, counts["collection"])
    assert len(rows) >= 2 and all(kind == "infra" for _, _, kind in rows)  # retried; none stored as the agent's failure
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        assert db.execute("SELECT count(*) FROM trajectories WHERE failure_kind = 'agent'").fetchone()[0] == 0


def _alarms(phone) -> str:
    return phone.device.shell("content query --uri content://com.android.deskclock/alarms")


def test_phones_that_are_not_virtual_are_not_wiped_without_allow_reset(tmp_path, virtual_phone, scripted):
    virtual_phone.device.shell("content insert --uri content://com.android.deskclock/alarms --bind hour:i:6 --bind minutes:i:10")
    before = _alarms(virtual_phone)
    assert "hour=6" in before
    adb = ["--adb", f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"]  # the phone as any adb device, not a virtual one
    res = cli("collect", *scripted, *adb, *_place(tmp_path))
    assert res.returncode == 2, res.stdout + res.stderr
    _no_traceback(res)
    assert "--allow-reset" in _said(res) and virtual_phone.serial in _said(res)
    assert _alarms(virtual_phone) == before  # its alarms are still there
    assert not (tmp_path / "t.sqlite").exists()  # refused before a store was made

    allowed = cli("collect", *scripted, *adb, *_place(tmp_path), "--allow-reset", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning" in _said(allowed) and virtual_phone.serial in _said(allowed)
    assert json.loads(allowed.stdout)["total"] == 2
