"""What a trajectory cost, its sub-agents included: the store counts the tokens of every episode
delegated under it (every level down, even when the delegating episode died), and `run`, `show`,
`trajectories list` and `view` show the total with the sub-agents' share apart from its own."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from planner_runtime.contract import DeviceRef, Feedback, Source, Step, ToolCall, Trajectory, TrajectoryStatus, Usage
from planner_runtime.cost import cost_report
from planner_runtime.trajectories.store import TrajectoryStore

_HOME = tempfile.mkdtemp(prefix="planner-agent-test-home-")  # memory profiles: never the user's own


def _begin(store: TrajectoryStore, goal: str, parent: str | None = None, *step_usage: tuple[int, int]) -> str:
    traj = Trajectory(goal=goal, source=Source.sandbox, device=DeviceRef(serial="s"), planner="scripted", parent=parent)
    store.begin(traj)
    for i, (p, c) in enumerate(step_usage):
        call = ToolCall(name="read_screen")
        store.append_step(traj.id, Step(index=i, messages=(), raw_output="", tool_call=call, feedback=Feedback.ok(call.call_id),
                                        usage=Usage(prompt_tokens=p, completion_tokens=c)))
    return traj.id


def _end(store: TrajectoryStore, traj_id: str, prompt: int, completion: int) -> None:
    store.end(traj_id, TrajectoryStatus.finished, answer="a", usage=Usage(prompt_tokens=prompt, completion_tokens=completion))


def test_sub_agents_count_at_every_level_and_when_the_parent_died(tmp_path):
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        parent = _begin(store, "parent", None, (90, 9))
        _end(store, parent, 100, 10)  # its total also counts a turn not kept as a step
        child = _begin(store, "child", parent, (50, 5))
        _end(store, child, 50, 5)
        grandchild = _begin(store, "grandchild", child, (7, 1), (3, 1))  # cut off: no total written
        sibling = _begin(store, "sibling", parent, (20, 2))
        _end(store, sibling, 20, 2)
        # A parent that died during its delegate step: its own turns are its committed steps, and
        # the sub-agent it started is stored, so it still counts (its delegate step never was).
        died = _begin(store, "died", None, (30, 3))
        orphan = _begin(store, "orphan's sub-agent", died, (40, 4))
        _end(store, orphan, 40, 4)
        _begin(store, "unrelated", None, (1000, 100))

        tokens = store.usage(parent)
        assert tokens.own == Usage(prompt_tokens=100, completion_tokens=10)
        assert tokens.subagents == Usage(prompt_tokens=50 + 10 + 20, completion_tokens=5 + 2 + 2) and tokens.subagent_episodes == 3
        assert store.descendants(parent) == [child, grandchild, sibling]
        assert store.usage(child).subagents == Usage(prompt_tokens=10, completion_tokens=2)
        assert store.usage(died).own == Usage(prompt_tokens=30, completion_tokens=3)
        assert store.usage(died).total == Usage(prompt_tokens=70, completion_tokens=7)

        rows = {r.goal: r for r in store.query()}
        assert (rows["parent"].total_prompt_tokens, rows["parent"].subagent_prompt_tokens, rows["parent"].subagents) == (180, 80, 3)
        assert (rows["grandchild"].prompt_tokens, rows["grandchild"].subagents) == (10, 0)
        assert rows["died"].total_completion_tokens == 7 and rows["unrelated"].total_prompt_tokens == 1000

        family = [store.get(i) for i in (parent, *store.descendants(parent), died, *store.descendants(died))]
        report = cost_report(family, {})
        assert report.tasks == 2 and report.input_tokens == 180 + 70 and report.subagent_input_tokens == 80 + 40
        assert report.subagent_output_tokens_per_1k_tasks == 1000 * (9 + 4) / 2


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": os.environ.get("PLANNER_AGENT_HOME", _HOME)}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=240, env=env)


def _stored(db: Path, where: str, *args: str) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT sum(prompt_tokens), sum(completion_tokens) FROM trajectories WHERE {where}", args).fetchone()


def test_run_show_list_and_view_show_the_sub_agents_share(tmp_path):
    script = tmp_path / "calls.json"
    script.write_text(json.dumps([
        {"name": "delegate", "arguments": {"goal": "Read what the home screen shows", "tools": ["read_screen"], "budget": 3}},
        {"name": "read_screen", "arguments": {}},  # the sub-agent's turns
        {"name": "finish", "arguments": {"answer": "the home screen"}},
        {"name": "finish", "arguments": {"answer": "It shows the home screen"}},
    ]))
    db = tmp_path / "t.sqlite"
    res = _cli("run", "What is on my screen?", "--virtual", "--planner", "scripted", "--script", str(script), "--store", str(db))
    assert res.returncode == 0, res.stderr + res.stdout
    traj_id = re.search(r"trajectory: (traj_\w+)", res.stdout).group(1)
    own = _stored(db, "id = ?", traj_id)
    sub = _stored(db, "parent = ?", traj_id)
    total = (own[0] + sub[0], own[1] + sub[1])
    assert sub[0] > 0 and own[0] > 0
    split = f"{total[0]} prompt + {total[1]} output tokens (own {own[0]} + {own[1]}, sub-agents {sub[0]} + {sub[1]} in 1 episode)"
    assert split in res.stdout  # run's summary

    shown = _cli("show", traj_id, "--store", str(db))
    assert shown.returncode == 0 and split in shown.stdout, shown.stdout
    as_json = json.loads(_cli("show", traj_id, "--store", str(db), "--json").stdout)
    tokens = as_json["tokens"]
    assert [(tokens[k]["prompt_tokens"], tokens[k]["completion_tokens"]) for k in ("own", "subagents", "total")] == [own, sub, total]
    assert tokens["subagent_episodes"] == 1 and (as_json["usage"]["prompt_tokens"], as_json["usage"]["completion_tokens"]) == own

    listed = {r["id"]: r for r in json.loads(_cli("trajectories", "list", "--store", str(db), "--json").stdout)}
    row = listed[traj_id]
    assert (row["prompt_tokens"], row["completion_tokens"]) == own
    assert (row["subagent_prompt_tokens"], row["subagent_completion_tokens"], row["subagents"]) == (*sub, 1)
    assert (row["total_prompt_tokens"], row["total_completion_tokens"]) == total
    table = _cli("trajectories", "list", "--store", str(db)).stdout
    assert f"{total[0]}/{total[1]}" in table and f"{sub[0]}/{sub[1]} (1)" in table

    page = tmp_path / "page.html"
    assert _cli("view", traj_id, "--store", str(db), "--out", str(page)).returncode == 0
    html = page.read_text()
    assert (f"{total[0]} prompt + {total[1]} output — own {own[0]} prompt + {own[1]} output, "
            f"sub-agents (1 episode) {sub[0]} prompt + {sub[1]} output") in html
