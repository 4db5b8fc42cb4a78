"""``collect --ray`` and ``bench --ray`` as a user runs them, on two device hosts of the local Ray
(``--ray auto`` finds the cluster the fixture started): the same items, counts and report as
without ``--ray``, and a resume that runs nothing twice."""

from __future__ import annotations

import json
import sqlite3

from typer.testing import CliRunner

from planner_runtime.cli.main import app

TASKS = ["--task", "clock.set_alarm", "--task", "contacts.add_contact", "--task", "subagent.banking_balance_text",
         "--task", "payments.send_money"]


def _place(tmp_path) -> list[str]:
    return ["--store", str(tmp_path / "t.sqlite"), "--state-dir", str(tmp_path / "pool"), "-n", "2"]


def test_collect_on_two_hosts_stores_every_item_once_and_its_resume_runs_nothing(ray_cluster, tmp_path):
    res = CliRunner().invoke(app, ["collect", "--ray", "auto", "--ray-hosts", "2", "--planner", "demo", *TASKS, "-k", "2",
                                   *_place(tmp_path), "--json"])
    assert res.exit_code == 0, res.stderr
    counts = json.loads(res.stdout)
    assert (counts["total"], counts["succeeded"] + counts["failed"], counts["gave_up"]) == (8, 8, [])
    assert len(counts["hosts"]) == 2 and sum(counts["hosts"].values()) == 8
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        items = db.execute("SELECT item FROM trajectories WHERE collection = ? AND parent IS NULL", (counts["collection"],)).fetchall()
        subagents = db.execute("SELECT count(*) FROM trajectories WHERE parent IS NOT NULL").fetchone()[0]
    assert sorted(i for (i,) in items) == sorted(f"{t}#{r}" for t in TASKS[1::2] for r in range(2))
    assert subagents == 2  # each banking episode's sub-agent came along

    again = CliRunner().invoke(app, ["collect", "--resume", counts["collection"], "--ray", "auto", *_place(tmp_path), "--json"])
    assert again.exit_code == 0, again.stderr
    assert (json.loads(again.stdout)["skipped"], json.loads(again.stdout)["succeeded"]) == (8, 0)


def _scores(report: dict) -> dict:
    """A bench report without what differs from run to run (ids, times)."""
    planners = {}
    for label, p in report["planners"].items():
        groups = {kind: {name: {k: v for k, v in g.items() if k != "seconds"} for name, g in p[kind].items()}
                  for kind in ("categories", "domains", "difficulties")}
        planners[label] = {**groups, "infra": p["infra"], "task_errors": p["task_errors"]}
    return planners


def test_bench_on_two_hosts_reports_what_a_local_bench_reports(ray_cluster, tmp_path):
    options = ["bench", "--planner", "demo", *TASKS, "-k", "2", *_place(tmp_path), "--json"]
    on_ray = CliRunner().invoke(app, [*options, "--ray", "auto", "--ray-hosts", "2"])
    local = CliRunner().invoke(app, options)
    assert on_ray.exit_code == local.exit_code == 0, on_ray.stderr + local.stderr
    ours, theirs = json.loads(on_ray.stdout), json.loads(local.stdout)
    assert _scores(ours) == _scores(theirs)
    assert ours["planners"]["demo"]["categories"]["tool"]["n"] == 6  # scored, not empty on both sides
