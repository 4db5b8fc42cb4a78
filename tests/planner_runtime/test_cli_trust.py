"""The command line a user and a script can trust, run as they run it (subprocesses): a task's
setup never resets a phone it was not allowed to, exit statuses say what happened, ``--json``
keeps stdout to JSON, and mistakes are one ``error:`` line, never a traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planner_runtime.trajectories.store import TrajectoryStore

ALARMS = "content://com.android.deskclock/alarms"
SET_730 = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "Set."}}]
SET_745 = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 45}}, {"name": "finish", "arguments": {"answer": "Set."}}]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def script(tmp_path: Path, calls: list, name: str = "calls.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(calls))
    return str(path)


def alarms(handle) -> list[tuple[int, int]]:  # noqa: ANN001 - PhoneHandle
    rows = handle.device.shell(f"content query --uri {ALARMS}")
    return sorted((int(h), int(m)) for h, m in re.findall(r"hour=(\d+), minutes=(\d+)", rows))


def one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    """The run failed the way a user's mistake should: no traceback, exactly one error line."""
    assert "Traceback" not in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


# -- a task's setup only where it is allowed ------------------------------------------------------
@pytest.fixture
def phone_with_alarms(virtual_phone):
    """A phone on the real adb server, given as --serial (a real phone as far as `run` can tell),
    holding the user's two alarms."""
    for hour, minutes in ((6, 5), (8, 15)):
        out = virtual_phone.device.shell(f"content insert --uri {ALARMS} --bind hour:i:{hour} --bind minutes:i:{minutes} --bind enabled:i:1; echo $?")
        assert out.strip() == "0"
    assert alarms(virtual_phone) == [(6, 5), (8, 15)]
    return virtual_phone


def _on(handle) -> tuple[str, ...]:  # noqa: ANN001
    return ("--serial", handle.serial, "--adb", f"{handle.adb.host}:{handle.adb.port}")


def test_a_free_form_goal_that_reads_like_a_task_never_resets_the_phone(tmp_path, phone_with_alarms):
    res = cli("run", "Set an alarm for 7:30", *_on(phone_with_alarms), "--planner", "scripted", "--script", script(tmp_path, SET_730),
              "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stderr + res.stdout
    assert alarms(phone_with_alarms) == [(6, 5), (7, 30), (8, 15)]  # the user's alarms survive; the new one is added
    assert "verdict: none" in res.stdout and "neither seeded nor verified" in res.stdout


def test_a_task_on_a_real_phone_needs_allow_reset_and_warns_what_it_resets(tmp_path, phone_with_alarms):
    common = ("run", "--task", "clock.set_alarm", *_on(phone_with_alarms), "--planner", "scripted", "--script",
              script(tmp_path, SET_730), "--store", str(tmp_path / "t.sqlite"))
    refused = cli(*common)
    assert refused.returncode == 2
    line = one_error_line(refused)
    assert "--allow-reset" in line and phone_with_alarms.serial in line and f"delete every row of {ALARMS}" in line
    assert "step 1" not in refused.stdout
    assert alarms(phone_with_alarms) == [(6, 5), (8, 15)]  # untouched

    allowed = cli(*common, "--allow-reset")
    assert allowed.returncode == 0, allowed.stderr + allowed.stdout
    assert f"warning: --allow-reset: task clock.set_alarm now resets phone {phone_with_alarms.serial}: delete every row of {ALARMS}" in allowed.stderr
    assert alarms(phone_with_alarms) == [(7, 30)] and "verdict: success" in allowed.stdout


def test_a_phone_marked_disposable_is_seeded_without_the_flag(tmp_path, phone_with_alarms):
    res = cli("run", "--task", "clock.set_alarm", *_on(phone_with_alarms), "--planner", "scripted", "--script", script(tmp_path, SET_730),
              "--store", str(tmp_path / "t.sqlite"), env={"PLANNER_AGENT_DISPOSABLE_SERIALS": f"other, {phone_with_alarms.serial}"})
    assert res.returncode == 0, res.stderr + res.stdout
    assert alarms(phone_with_alarms) == [(7, 30)] and "warning" not in res.stderr


def test_the_phone_found_on_the_adb_server_is_protected_too_and_virtual_runs_beside_it(tmp_path, phone_with_alarms):
    adb = f"{phone_with_alarms.adb.host}:{phone_with_alarms.adb.port}"
    common = ("run", "--task", "clock.set_alarm", "--adb", adb, "--planner", "scripted", "--script", script(tmp_path, SET_730),
              "--store", str(tmp_path / "t.sqlite"))
    refused = cli(*common)  # no --serial: the first phone adb lists is the user's
    assert refused.returncode == 2 and "--virtual" in one_error_line(refused)
    on_virtual = cli(*common, "--virtual")
    assert on_virtual.returncode == 0, on_virtual.stderr + on_virtual.stdout
    assert "started the built-in virtual phone" in on_virtual.stderr and "verdict: success" in on_virtual.stdout
    assert alarms(phone_with_alarms) == [(6, 5), (8, 15)]



def test_an_unauthorized_phone_is_reported_not_replaced_by_the_virtual_phone(tmp_path, unauthorized_phone):
    serial, adb = unauthorized_phone
    calls = script(tmp_path, [{"name": "finish", "arguments": {"answer": "ok"}}])
    for where in (("--adb", adb), ("--adb", adb, "--serial", serial)):
        res = cli("run", "What is on my screen?", *where, "--planner", "scripted", "--script", calls, "--store", str(tmp_path / "t.sqlite"))
        assert res.returncode == 2, res.stderr + res.stdout
        assert f"phone {serial} is unauthorized: accept the USB debugging dialog on it" in one_error_line(res)
        assert "virtual phone" not in res.stderr


# -- exit statuses -------------------------------------------------------------------------------
def test_exit_status_says_how_the_episode_ended(tmp_path):
    common = ("--planner", "scripted", "--virtual", "--store", str(tmp_path / "t.sqlite"))
    assert cli("run", "--task", "clock.set_alarm", "--script", script(tmp_path, SET_730), *common).returncode == 0
    failed = cli("run", "--task", "clock.set_alarm", "--script", script(tmp_path, SET_745), *common)
    assert failed.returncode == 1 and "verdict: failed" in failed.stdout
    truncated = cli("run", "Look around", "--script", script(tmp_path, [{"name": "read_screen", "arguments": {}}] * 3), "--max-steps", "2", *common)
    assert truncated.returncode == 4 and "status: truncated" in truncated.stdout
    finished = cli("run", "Look around", "--script", script(tmp_path, SET_730[1:]), *common)
    assert finished.returncode == 0 and "status: finished" in finished.stdout


def test_help_documents_exit_statuses_and_shows_format_hints_literally():
    res = cli("run", "--help", env={"COLUMNS": "300"})
    assert res.returncode == 0
    flat = " ".join(res.stdout.split())
    assert "allow: [send, call, ...]" in flat and '[{"name": "open_app"' in flat
    assert "4 an episode cut off by its step, token or time limit" in flat and "130 interrupted" in flat
    collect = " ".join(cli("collect", "--help", env={"COLUMNS": "300"}).stdout.split())
    assert "{task id: [calls]}" in collect


@pytest.fixture
def silent_planner():
    """An OpenAI-compatible address that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield f"openai://127.0.0.1:{sock.getsockname()[1]}/model"
    sock.close()


def test_ctrl_c_exits_130_and_names_the_kept_trajectory(tmp_path, silent_planner):
    db = tmp_path / "t.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "planner_runtime.cli.main", "run", "Look around", "--planner", silent_planner,
                             "--virtual", "--store", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (db.exists() and _trajectory_ids(db)):
        time.sleep(0.1)
    time.sleep(0.3)  # the planner's request is now waiting on the silent server
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    (traj_id,) = _trajectory_ids(db)
    assert f"interrupted: trajectory {traj_id}" in err and "Traceback" not in err
    with TrajectoryStore(db, create=False) as store:
        assert store.get(traj_id).status.value == "interrupted"


def _trajectory_ids(db: Path) -> list[str]:
    with TrajectoryStore(db, create=False) as store:
        return [r.id for r in store.query()]


def test_planner_timeout_bounds_the_wait_for_a_silent_endpoint(tmp_path, silent_planner):
    started = time.monotonic()
    res = cli("run", "Look around", "--planner", silent_planner, "--planner-timeout", "0.5", "--max-steps", "1",
              "--virtual", "--store", str(tmp_path / "t.sqlite"), timeout=60)
    assert time.monotonic() - started < 40  # the default (60 s a request, retried) would still be waiting
    assert res.returncode in (3, 4) and "Traceback" not in res.stderr, res.stderr


# -- --json: only JSON on stdout -----------------------------------------------------------------
def test_json_output_is_only_json_on_stdout(tmp_path):
    db = tmp_path / "t.sqlite"
    res = cli("run", "--task", "clock.set_alarm", "--planner", "scripted", "--script", script(tmp_path, SET_730), "--virtual",
              "--store", str(db), "--json")
    assert res.returncode == 0, res.stderr
    traj = json.loads(res.stdout)  # the whole of stdout
    assert traj["verdict"]["success"] is True and "step 1" in res.stderr and f"trajectory: {traj['id']}" in res.stderr
    shown = cli("show", traj["id"], "--store", str(db), "--json")
    assert json.loads(shown.stdout)["id"] == traj["id"]
    listed = json.loads(cli("trajectories", "list", "--store", str(db), "--json").stdout)
    assert [r["id"] for r in listed] == [traj["id"]]
    page = tmp_path / "page.html"
    viewed = json.loads(cli("view", traj["id"], "--store", str(db), "--out", str(page), "--json").stdout)
    assert viewed == {"path": str(page), "trajectories": [traj["id"]], "steps": 2} and page.is_file()
    skills = json.loads(cli("skills", "list", "--json").stdout)
    assert skills and all("name" in s for s in skills)
    version = cli("--version")
    assert version.returncode == 0 and re.fullmatch(r"planner-agent \d+\.\d+\S*\n", version.stdout)


# -- user mistakes: one line, a usage exit, nothing created --------------------------------------
def test_user_mistakes_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "map.json").write_text('{"set_alarm": {}}')
    (tmp_path / "notjson.json").write_text("set_alarm(7, 30)")
    (tmp_path / "items.json").write_text('["set_alarm", 7]')
    (tmp_path / "noname.json").write_text('[{"arguments": {}}]')
    (tmp_path / "answers.yaml").write_text("- which time\n- '7:30'\n")
    (tmp_path / "policy.yaml").write_text("- send\n")
    not_a_folder = tmp_path / "map.json"  # a file where --out wants a folder: unwritable, even for root
    db = tmp_path / "t.sqlite"
    assert cli("run", "--task", "clock.set_alarm", "--planner", "scripted", "--script", script(tmp_path, SET_730), "--virtual",
               "--store", str(db)).returncode == 0
    traj_id = _trajectory_ids(db)[0]
    run = ("run", "Look around", "--virtual", "--store", str(db))
    planner = (*run, "--planner", "scripted")
    scripted = (*planner, "--script", script(tmp_path, SET_730))
    typo = str(tmp_path / "typo.sqlite")
    cases = {
        "missing --script": ((*planner, "--script", str(tmp_path / "nope.json")), "cannot read it"),
        "--script not JSON": ((*planner, "--script", str(tmp_path / "notjson.json")), "not JSON"),
        "--script not a list": ((*planner, "--script", str(tmp_path / "map.json")), "expected a JSON list of tool calls"),
        "--script items not objects": ((*planner, "--script", str(tmp_path / "items.json")), "item 0 is not an object"),
        "--script item without a name": ((*planner, "--script", str(tmp_path / "noname.json")), 'item 0 has no "name"'),
        "--planner scripted without --script": (planner, "--planner scripted needs --script"),
        "--answers a list": ((*scripted, "--answers", str(tmp_path / "answers.yaml")), "expected a mapping of question pattern"),
        "--policy a list": ((*scripted, "--policy", str(tmp_path / "policy.yaml")), "policy"),
        "--max-steps 0": ((*scripted, "--max-steps", "0"), "--max-steps"),
        "--max-tokens -5": ((*scripted, "--max-tokens", "-5"), "--max-tokens"),
        "--planner-timeout 0": ((*scripted, "--planner-timeout", "0"), "--planner-timeout"),
        "--store in a missing folder": (("run", "x", "--virtual", "--store", str(tmp_path / "no" / "t.sqlite")), "does not exist"),
        "show --store mistyped": (("show", traj_id, "--store", typo), "no trajectory store at"),
        "trajectories --store mistyped": (("trajectories", "list", "--store", typo), "no trajectory store at"),
        "view --store mistyped": (("view", traj_id, "--store", typo), "no trajectory store at"),
        "view --out unwritable": (("view", traj_id, "--store", str(db), "--out", str(not_a_folder / "p.html")), "cannot write it"),
        "memory list --profile mistyped": (("memory", "list", "--profile", "lapotp"), "no memory profile 'lapotp'"),
        "memory list --limit 0": (("memory", "list", "--limit", "0"), "--limit"),
        "serve --port 99999": (("serve", "--port", "99999"), "--port"),
        "serve --port -1": (("serve", "--port", "-1"), "--port"),
        "serve --max-batch 0": (("serve", "--max-batch", "0"), "--max-batch"),
        "phone serve --port 99999": (("phone", "serve", "--port", "99999"), "--port"),
        "phone serve --count 0": (("phone", "serve", "--count", "0"), "--count"),
        "phone serve ports past 65535": (("phone", "serve", "--port", "65535", "--count", "2"), "above 65535"),
    }
    env_cases = {
        "PLANNER_AGENT_MAX_STEPS=0": ({"PLANNER_AGENT_MAX_STEPS": "0"}, "PLANNER_AGENT_MAX_STEPS='0'"),
        "PLANNER_AGENT_PRICES not JSON": ({"PLANNER_AGENT_PRICES": "{gpt: 1}"}, "PLANNER_AGENT_PRICES='{gpt: 1}': not JSON"),
        "PLANNER_AGENT_APPIUM_CAPS a list": ({"PLANNER_AGENT_APPIUM_CAPS": "[1]"}, "PLANNER_AGENT_APPIUM_CAPS='[1]'"),
        "PLANNER_AGENT_ADB bad port": ({"PLANNER_AGENT_ADB": "127.0.0.1:99999"}, "PLANNER_AGENT_ADB='127.0.0.1:99999'"),
        "PLANNER_AGENT_THREADS=two": ({"PLANNER_AGENT_THREADS": "two"}, "PLANNER_AGENT_THREADS='two'"),
    }
    results = {name: (cli(*args), want) for name, (args, want) in cases.items()}
    results |= {name: (cli("trajectories", "list", "--store", str(db), env=env), want) for name, (env, want) in env_cases.items()}
    for name, (res, want) in results.items():
        assert res.returncode == 2, (name, res.returncode, res.stderr)
        assert want in one_error_line(res), (name, res.stderr)
    assert not Path(typo).exists() and not (tmp_path / "no").exists()
    assert len(_trajectory_ids(db)) == 1  # no mistake ran an episode
