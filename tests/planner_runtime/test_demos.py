"""Demonstrations: every built-in task's demo passes its own verifier on virtual phones; the demo
planner writes what a model writes; ``collect --planner demo`` and ``tasks demos`` keep a demo
that fails its verifier out of training data and say so, one line per task."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from device_farm.pool.pool import DevicePool
from device_farm.virtual.source import VirtualSource
from planner_runtime.contract import ToolCall
from planner_runtime.planners import create
from planner_runtime.planners.demo import DemoPlanner
from planner_runtime.planners.toolcalls import format_tool_call
from planner_runtime.runs.demos import check_demos
from planner_runtime.tasks.spec import builtin_suite, find_task, load_suite
from planner_runtime.trajectories.store import TrajectoryStore

# A random template with a demo that uses the drawn values, and a task whose demo sets the wrong
# alarm: it must fail its verifier, be named, and never reach the SFT export.
SUITE = """\
tasks:
  - id: clock.random_alarm
    goal: "Set an alarm for {hour}:{minute:02d}"
    random: {hour: {int: [5, 9]}, minute: {choice: [0, 15, 30, 45]}}
    domain: clock
    setup:
      - content_delete: {uri: "content://com.android.deskclock/alarms"}
    checks:
      - name: the alarm exists
        content: {uri: "content://com.android.deskclock/alarms", where: "hour={hour} AND minutes={minute}"}
    demo:
      - {name: set_alarm, arguments: {hour: "{hour}", minutes: "{minute}"}}
      - {name: finish, arguments: {answer: "Alarm set for {hour}:{minute:02d}"}}
  - id: clock.wrong_demo
    goal: "Set my ferry alarm for 7:30"
    domain: clock
    setup:
      - content_delete: {uri: "content://com.android.deskclock/alarms"}
    checks:
      - name: an alarm at 7:30 exists
        content: {uri: "content://com.android.deskclock/alarms", where: "hour=7 AND minutes=30"}
    demo:
      - {name: set_alarm, arguments: {hour: 8, minutes: 30}}
      - {name: finish, arguments: {answer: "Alarm set"}}
"""


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=timeout)


def _said(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    return " ".join(res.stderr.split())


@pytest.fixture
def suite(tmp_path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def test_every_builtin_task_has_a_demo_that_its_verifier_passes(tmp_path):
    tasks = builtin_suite().tasks
    assert all(t.demo for t in tasks), [t.id for t in tasks if not t.demo]
    with TrajectoryStore(tmp_path / "t.sqlite") as store, DevicePool([VirtualSource(4)], state_dir=tmp_path / "pool") as pool:
        _, counts, failures = check_demos(tasks, pool=pool, store=store, workers=4)
        assert failures == [] and counts.success == counts.total == len(tasks), failures
        planners = {s.planner for s in store.query()}
    assert planners == {"demo"}  # the data source of every episode


def test_builtin_random_templates_keep_their_listed_instance_and_their_demos_solve_fresh_ones(tmp_path):
    templates = [t for t in builtin_suite().tasks if t.random]
    assert len(templates) >= 36
    for t in templates:  # seed 0 is the instance the suite lists, unchanged by its random parameters
        assert t.draw(0).id == t.id and t.draw(0).params == t.params and t.draw(0).rendered_goal() == t.rendered_goal()
    # Seed 0 of each is played by the test above; here each template plays one fresh seed, the
    # seeds taking turns over 1..5 so the suite stays as quick as one episode per template.
    fresh = [t.draw(1 + i % 5) for i, t in enumerate(templates)]
    with TrajectoryStore(tmp_path / "t.sqlite") as store, DevicePool([VirtualSource(4)], state_dir=tmp_path / "pool") as pool:
        _, counts, failures = check_demos(fresh, pool=pool, store=store, workers=4)
        played = {s.task_id for s in store.query()} - {None}  # a delegated sub-episode has no task of its own
    assert failures == [] and counts.success == counts.total == len(templates), failures
    assert played == {t.id for t in fresh}
    for t in templates:
        assert len({repr(sorted(t.draw(k).params.items())) for k in range(6)}) > 1, t.id  # fresh seeds, fresh tasks


def test_a_bench_scores_every_seeded_instance_under_its_listed_task(tmp_path):
    from planner_runtime.bench.runner import results
    from planner_runtime.runs.collect import collect
    from planner_runtime.runs.demos import DEMO_POLICY, demo_planner

    task = find_task("keep.create_list")
    with TrajectoryStore(tmp_path / "t.sqlite") as store, DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as pool:
        coll, counts = collect([task], pool=pool, store=store, planner_for=demo_planner, workers=2, repeat=4, policy=DEMO_POLICY)
        scored = results(store, coll, [task], {})
    assert counts.success == 4
    assert sorted(o.item for o in scored.outcomes) == [f"keep.create_list#{k}" for k in range(4)]  # repeats 1..3 ran keep.create_list@k
    assert {o.task_id for o in scored.outcomes} == {"keep.create_list"} and all(o.success for o in scored.outcomes)


def test_the_demo_planner_writes_what_a_model_writes():
    calls = find_task("clock.set_alarm@2").rendered_demo()
    assert calls[0].arguments == {"hour": 6, "minutes": 45}  # "{hour}" alone keeps the number a number
    planner = create("demo", calls=calls)
    out = [planner.plan([], []) for _ in calls]
    assert [o.text for o in out] == [format_tool_call(ToolCall(name=c.name, arguments=c.arguments)) for c in calls]
    assert out[0].text.startswith("<tool_call>\n") and out[0].text.endswith("\n</tool_call>")
    assert [(o.tool_calls[0].name, o.tool_calls[0].arguments) for o in out] == [(c.name, c.arguments) for c in calls]
    assert isinstance(planner, DemoPlanner) and planner.name == "demo"


def test_a_free_form_goal_with_the_demo_planner_is_a_usage_error(tmp_path):
    res = cli("run", "Set an alarm for 7:30", "--planner", "demo", "--virtual", "--store", str(tmp_path / "t.sqlite"))
    assert res.returncode == 2
    assert "--planner demo plays a task's demo: give --task ID" in _said(res)
    assert not (tmp_path / "t.sqlite").exists()


def test_run_plays_a_seeded_instance_of_a_random_template(tmp_path, suite):
    res = cli("run", "--task", "clock.random_alarm@3", "--suite", str(suite), "--planner", "demo", "--virtual",
              "--store", str(tmp_path / "t.sqlite"), "--json")
    assert res.returncode == 0, res.stderr
    traj = json.loads(res.stdout)
    drawn = find_task("clock.random_alarm@3", load_suite(suite))
    assert traj["task_id"] == "clock.random_alarm@3" and traj["verdict"]["success"]
    assert traj["steps"][0]["tool_call"]["arguments"] == {"hour": drawn.params["hour"], "minutes": drawn.params["minute"]}


def test_collect_keeps_a_failing_demo_out_of_training_data_and_names_it(tmp_path, suite):
    store = tmp_path / "t.sqlite"
    res = cli("collect", "--planner", "demo", "--suite", str(suite), "-k", "3", "-n", "2", "--store", str(store),
              "--state-dir", str(tmp_path / "pool"), "--json")
    assert res.returncode == 0, res.stderr  # failed verdicts are results, not a failed job
    assert json.loads(res.stdout)["succeeded"] == 3 and json.loads(res.stdout)["failed"] == 3
    said = _said(res)
    assert said.count("demo of clock.wrong_demo fails its verifier (check 'an alarm at 7:30 exists' failed") == 1
    assert "random_alarm" not in said
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT task_id, planner, success FROM trajectories ORDER BY task_id").fetchall()
    drawn = sorted(r[0] for r in rows if r[0].startswith("clock.random_alarm"))
    assert drawn == ["clock.random_alarm", "clock.random_alarm@1", "clock.random_alarm@2"]  # one instance per repeat
    assert {r[1] for r in rows} == {"demo"} and all(r[2] == (r[0] != "clock.wrong_demo") for r in rows)

    out = tmp_path / "sft.jsonl"
    exported = cli("export", "sft", "--out", str(out), "--store", str(store))
    assert exported.returncode == 0, exported.stderr
    exported = {json.loads(row)["task_id"] for row in out.read_text().splitlines()}
    assert exported == set(drawn)  # the failed demo is no training data


VARIANTS = """\
tasks:
  - id: clock.ferry_alarm
    goal: "Set my ferry alarm for {hour}:30"
    params: {hour: 7}
    variants: [{hour: 8}, {hour: 9}]
    domain: clock
    setup:
      - content_delete: {uri: "content://com.android.deskclock/alarms"}
    checks:
      - name: the alarm exists
        content: {uri: "content://com.android.deskclock/alarms", where: "hour={hour} AND minutes=30"}
    demo:
      - {name: set_alarm, arguments: {hour: "{hour}", minutes: 30}}
      - {name: finish, arguments: {answer: "Alarm set"}}
"""


def test_collect_draws_one_task_per_template_and_seeds_only_the_random_ones(tmp_path, suite):
    both = tmp_path / "both.yaml"
    both.write_text(VARIANTS + "\n".join(suite.read_text().splitlines()[1:]) + "\n")
    store = tmp_path / "t.sqlite"
    res = cli("collect", "--planner", "demo", "--suite", str(both), "--per-template", "1", "-k", "3", "--distinct",
              "-n", "2", "--store", str(store), "--state-dir", str(tmp_path / "pool"), "--json")
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(store) as db:
        drawn = sorted(r[0] for r in db.execute("SELECT task_id FROM trajectories"))
    # the first task of each template; only the random one is repeated, each repeat a fresh seed
    assert drawn == ["clock.ferry_alarm", "clock.random_alarm", "clock.random_alarm@1", "clock.random_alarm@2",
                     "clock.wrong_demo"]
    plain = cli("collect", "--planner", "demo", "--suite", str(both), "-k", "2", "-n", "2", "--store", str(tmp_path / "u.sqlite"),
                "--state-dir", str(tmp_path / "pool"), "--json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["succeeded"] + json.loads(plain.stdout)["failed"] == 2 * 5  # 3 variants + 2 tasks, twice


def test_tasks_demos_names_each_failing_demo_and_exits_1(tmp_path, suite):
    res = cli("tasks", "demos", "--suite", str(suite), "--seeds", "2", "-n", "2", "--json")
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert (report["played"], report["passed"]) == (3, 2)
    assert [f["task"] for f in report["failed"]] == ["clock.wrong_demo"]
    assert _said(res).count("DEMO FAILS ITS VERIFIER") == 1

    fine = cli("tasks", "demos", "--suite", str(suite), "--task", "clock.random_alarm", "--seeds", "3", "-n", "2")
    assert fine.returncode == 0, fine.stderr
    assert "3 demos played, 3 passed, 0 failed" in fine.stdout
