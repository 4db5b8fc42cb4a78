"""Answer checks that a guess cannot pass: a count or an amount is not found by listing numbers,
an expected time is not found inside another time, and the audit tries both (an answer naming
everything as the apps show it, and a number spray)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from planner_runtime.contract import ToolCall
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.runs.audit import naming_everything, number_spray
from planner_runtime.tasks.spec import builtin_suite, load_suite
from planner_runtime.tasks.verifiers import contains, names
from planner_runtime.harness.identity import EpisodeIdentity

BUILTIN = {t.id: t for t in builtin_suite().tasks}
SPRAY = "It is one of " + " ".join(str(i) for i in range(21))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": tempfile.mkdtemp(prefix="planner-agent-test-home-"), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True,
                          timeout=240, env=env)


def _answer(task_id: str, answer: str, device, device_ref, store):  # noqa: ANN001, ANN202
    task = BUILTIN[task_id]
    planner = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": answer})])
    return run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=planner, store=store, task=task, max_steps=1).verdict


def test_a_count_or_an_amount_is_not_found_by_listing_numbers(device, device_ref, store):
    for task_id in ("files.count_downloads", "files.count_camera_photos", "music.playlist_count"):
        verdict = _answer(task_id, SPRAY, device, device_ref, store)
        assert not verdict.success, (task_id, verdict.checks)
        assert "the answer must say which one it means" in verdict.checks[0].evidence
    assert _answer("files.count_downloads", "There are 3 files in Downloads.", device, device_ref, store).success
    # the photos' own names hold digits, which are no numbers of the answer
    assert _answer("files.count_camera_photos", "3 photos: IMG_20240512_093011.jpg, IMG_20240601_181502.jpg and "
                   "PXL_20240602_070001.jpg (VID_20240602_070500.mp4 is a video)", device, device_ref, store).success
    assert not _answer("payments.balance", "$1,234.56 or 1,180.00 or 99", device, device_ref, store).success
    assert not _answer("payments.total_sent_to_person", "$37.50 (15 + 22.50)", device, device_ref, store).success
    assert not _answer("payments.total_sent_to_person", "$67.50", device, device_ref, store).success
    assert not _answer("payments.total_sent_to_person", "37.50, or 67.50 with what he sent", device, device_ref, store).success
    # one value beside the expected one, and the numbers the goal states, are allowed
    assert _answer("travel.cheapest_stay", "Generator Paris, $130.00 for 2 nights from 2026-05-01", device, device_ref, store).success


def test_an_expected_time_is_not_found_inside_another_time(device, device_ref, store):
    wrong = _answer("calendar.when_is_dentist", "Your dentist is on Dec 3 at 19:30", device, device_ref, store)
    assert [c.passed for c in wrong.checks[:2]] == [False, True]
    for right in ("Friday, Dec 4 at 9:30 AM", "Fri, Dec 4 · 09:30", "December 4 at 9:30"):
        assert _answer("calendar.when_is_dentist", right, device, device_ref, store).success, right
    # the standup's time beside the dentist's is listing both
    assert not _answer("calendar.when_is_dentist", "Dec 4 at 9:30 (standup Dec 2 at 9:00)", device, device_ref, store).success


def test_contains_starts_at_a_word_and_never_glues_digits():
    assert contains("December 4", "Dec") and not contains("ADec 4", "Dec")
    assert not contains("19:30", "9:30") and not contains("9:305", "9:30") and contains("09:30", "9:30")
    assert not contains("room 45", "room 4") and contains("room 4B", "room 4")
    assert not contains("$1.5", "5") and not contains("$99.50", "$99") and contains("$99.00", "$99")
    assert not names("$1,250", "250") and names("250.00", "250") and not names("Adam", "Ada")


def test_the_audit_names_seeded_values_as_the_apps_show_them():
    dentist = naming_everything(BUILTIN["calendar.when_is_dentist"])
    assert "2026-12-04 09:30" in dentist and "Fri, Dec 4 9:30 AM" in dentist and "1796376600000" not in dentist
    assert "1,234.56" in naming_everything(BUILTIN["payments.balance"])
    spray = number_spray(BUILTIN["payments.total_sent_to_person"])
    assert spray.startswith(SPRAY) and "22.5" in spray and "180" in spray


def test_the_audit_flags_a_task_a_number_spray_passes(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks:\n  - id: files.count_loose\n    goal: How many files are in my Downloads folder?\n    domain: files\n"
        "    setup:\n      - folder_empty: {path: /sdcard/Download}\n"
        "      - file_push: {path: /sdcard/Download/a.pdf, content: a}\n"
        "      - file_push: {path: /sdcard/Download/b.pdf, content: b}\n"
        "    checks:\n      - answer_contains: '2'\n"
        "  - id: files.count_strict\n    goal: How many files are in my Downloads folder?\n    domain: files\n"
        "    setup:\n      - folder_empty: {path: /sdcard/Download}\n"
        "      - file_push: {path: /sdcard/Download/a.pdf, content: a}\n"
        "      - file_push: {path: /sdcard/Download/b.pdf, content: b}\n"
        "    checks:\n      - answer_number: {value: 2}\n")
    assert load_suite(suite).tasks
    res = cli("tasks", "audit", "--suite", str(suite), "--store", str(tmp_path / "t.sqlite"), "--json")
    assert res.returncode == 1, res.stderr
    by_id = {r["task"]: r for r in json.loads(res.stdout)["results"]}
    assert by_id["files.count_loose"]["passes_by_number_spray"] and not by_id["files.count_loose"]["passes_by_naming_everything"]
    assert not by_id["files.count_strict"]["passes_by_number_spray"] and by_id["files.count_strict"]["ran"]
    assert "files.count_loose  PASSES BY NUMBER SPRAY" in res.stderr and "files.count_strict  ok" in res.stderr
