"""Checks that cannot be gamed, and an audit that never wipes a phone it was not told to.

An answer that lists every candidate must fail a task that asks for one of them
(``answer_excludes``); ``tasks audit`` judges every task a second time with an answer naming
everything its setup seeded and flags the tasks that pass it; and the audit seeds only fresh
built-in virtual phones unless ``--serial`` and ``--allow-reset`` name another phone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from device_farm.android import content_insert, content_query
from planner_runtime.contract import ToolCall
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.runs.audit import audit, builtin_phones, naming_everything
from planner_runtime.tasks.spec import load_suite
from planner_runtime.harness.identity import EpisodeIdentity

_HOME = tempfile.mkdtemp(prefix="planner-agent-test-home-")
CONTACTS = "content://com.android.contacts/raw_contacts"


def cli(*args: str, timeout: float = 240, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": os.environ.get("PLANNER_AGENT_HOME", _HOME), "COLUMNS": "80", **extra_env}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _lookup(task_id: str, excludes: str = "") -> str:
    """A task asking for one contact's number, with a second contact seeded as the wrong candidate."""
    return (
        f"  - id: {task_id}\n    goal: \"What is Grace's number?\"\n    domain: contacts\n"
        f"    setup:\n      - content_delete: {{uri: '{CONTACTS}'}}\n"
        f"      - content_insert: {{uri: '{CONTACTS}', values: {{display_name: Ada Lovelace, phone: '+1 555 0100'}}}}\n"
        f"      - content_insert: {{uri: '{CONTACTS}', values: {{display_name: Grace Hopper, phone: '+1 555 0199'}}}}\n"
        f"    checks:\n      - answer_contains: '+1 555 0199'\n{excludes}"
    )


EXCLUDES = "      - answer_excludes: ['555 0100', 'Ada']\n"


def _answer(task, answer: str, device, device_ref, store):  # noqa: ANN001, ANN202
    planner = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": answer})])
    return run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=planner, store=store, task=task, max_steps=1).verdict


def test_answer_excludes_fails_an_answer_naming_every_candidate(tmp_path, device, device_ref, store):
    (tmp_path / "s.yaml").write_text("tasks:\n" + _lookup("lookup.fixed", EXCLUDES))
    task = load_suite(tmp_path / "s.yaml").tasks[0]
    right = _answer(task, "Grace Hopper: +1 555 0199", device, device_ref, store)
    assert right.success, right.checks
    everything = _answer(task, "Ada Lovelace +1 555 0100; Grace Hopper +1 555 0199", device, device_ref, store)
    assert [c.passed for c in everything.checks] == [True, False]
    assert "names '555 0100', 'Ada'" in everything.checks[1].evidence
    # whole words only, ignoring case: "Adam" does not name Ada, "ADA" does
    assert _answer(task, "+1 555 0199, not Adam's", device, device_ref, store).success
    assert not _answer(task, "+1 555 0199 (ADA has another)", device, device_ref, store).success


def test_audit_flags_a_task_an_answer_naming_everything_passes(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks:\n" + _lookup("lookup.gameable") + _lookup("lookup.fixed", EXCLUDES))
    assert "+1 555 0100" in naming_everything(load_suite(suite).tasks[0])
    res = cli("tasks", "audit", "--suite", str(suite), "--store", str(tmp_path / "t.sqlite"), "--json")
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert (report["audited"], report["flagged"]) == (2, 1)
    by_id = {r["task"]: r for r in report["results"]}
    assert by_id["lookup.gameable"]["passes_by_naming_everything"] and not by_id["lookup.gameable"]["passes_without_acting"]
    assert not by_id["lookup.fixed"]["passes_by_naming_everything"] and by_id["lookup.fixed"]["ran"]
    assert "lookup.gameable  PASSES BY NAMING EVERYTHING" in res.stderr and "lookup.fixed  ok" in res.stderr


def _keep_contact(device) -> None:  # noqa: ANN001
    content_insert(device, CONTACTS, {"display_name": "Keep Me", "phone": "+1 555 0042"})


def _kept(device) -> bool:  # noqa: ANN001
    return any(row.get("display_name") == "Keep Me" for row in content_query(device, CONTACTS))


def test_audit_on_a_named_phone_needs_allow_reset_and_leaves_it_untouched(tmp_path, virtual_phone, device):
    _keep_contact(device)
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    res = cli("tasks", "audit", "--serial", virtual_phone.serial, "--adb", adb, "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    line, = res.stderr.splitlines()
    assert line.startswith(f"error: the audit runs every task's setup on {virtual_phone.serial}, which deletes rows of ")
    assert CONTACTS in line and "--allow-reset" in line
    assert _kept(device)


def test_audit_without_serial_leaves_an_attached_phone_untouched(tmp_path, virtual_phone, device):
    _keep_contact(device)
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks:\n" + _lookup("lookup.gameable"))
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    res = cli("tasks", "audit", "--suite", str(suite), "--adb", adb, "--store", str(tmp_path / "t.sqlite"))
    assert "1 tasks audited" in res.stdout, res.stdout + res.stderr
    assert _kept(device)  # the setup deleted every contact, but on a built-in virtual phone


def test_audit_with_allow_reset_warns_and_runs_on_the_named_phone(tmp_path, virtual_phone, device):
    _keep_contact(device)
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks:\n" + _lookup("lookup.fixed", EXCLUDES))
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    res = cli("tasks", "audit", "--suite", str(suite), "--serial", virtual_phone.serial, "--allow-reset", "--adb", adb,
              "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"warning: running every task's setup on {virtual_phone.serial}: it deletes rows of {CONTACTS}; adds rows to {CONTACTS}" \
        in " ".join(res.stderr.split())
    assert not _kept(device)  # as warned


def test_audit_runs_on_a_phone_marked_disposable(tmp_path, virtual_phone, device):
    _keep_contact(device)
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks:\n" + _lookup("lookup.fixed", EXCLUDES))
    adb = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    res = cli("tasks", "audit", "--suite", str(suite), "--serial", virtual_phone.serial, "--adb", adb,
              "--store", str(tmp_path / "t.sqlite"), PLANNER_AGENT_DISPOSABLE_SERIALS=virtual_phone.serial)
    assert res.returncode == 0 and "warning" not in res.stderr, res.stdout + res.stderr
    assert not _kept(device)


def test_naming_everything_lists_the_rows_of_the_services_a_task_uses_so_an_answer_only_check_is_flagged(store):
    from planner_runtime.tasks.spec import find_task
    from planner_runtime.tasks.world import task_world

    guarded = find_task("flights.gate")  # asks for one gate; another flight's gate is excluded
    bare = guarded.model_copy(update={"id": "flights.gate-bare", "checks": tuple(c for c in guarded.checks if c.answer_excludes is None)})
    everything = naming_everything(bare, world=task_world(bare))
    assert "B32" in everything and "A07" in everything  # every flight's gate the service holds
    assert "Bahnhof" not in everything  # not the rows of services the task does not use
    with builtin_phones() as phones:
        flagged = {r.task_id: r.passes_by_naming_everything for r in audit([guarded, bare], phones, store)}
    assert flagged == {"flights.gate": False, "flights.gate-bare": True}
