"""A whole co-evolution round through the real verbs, each stage its own ``planner-agent`` process:
bench the shipped release, analyze its failures into proposals, a person decides them, the
round revises the harness and the recipe, collects demos under the revised harness, builds data,
trains, benches and gates; a held-back round cannot be promoted, a passing one is promoted once
(release and harness together), and the report charts it.

Every bench episode gets one step, so every task fails the same way whatever the model says
(no finish): the analysis has failures to propose from and the gate is deterministic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner_runtime.coevolve.rounds import RoundStore, Status
from planner_runtime.harness import revision
from planner_runtime.harness.revision.files import check_revision
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.training import releases

TASKS = ["payments.balance", "files.read_booking_code"]  # a train and a test template, neither done in one step


def _cli(*args: str, home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_AGENT_HOME": str(home), "PLANNER_AGENT_THREADS": os.environ.get("PLANNER_AGENT_THREADS", "2")}
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.slow  # the shipped release loads in four stage processes; two training steps
@pytest.mark.timeout(1200)
def test_a_round_from_bench_to_gate_and_its_promotion(tmp_path):
    home, store = tmp_path / "home", tmp_path / "t.sqlite"
    policy = tmp_path / "allow.yaml"
    policy.write_text("allow: [send, call, pay, purchase, delete, share, install, security]\n")
    start = _cli("round", "start", "--from", "embedded-sft", "--store", str(store), "--policy", str(policy), "--max-steps", "1",
                 "-n", "1", *(w for t in TASKS for w in ("--task", t)), "--train-arg=--max-steps", "--train-arg=2",
                 "--train-arg=--max-length", "--train-arg=512", "--json", home=home)
    assert start.returncode == 0, start.stderr
    round_ = json.loads(start.stdout)
    assert round_["status"] == "deciding" and round_["results"]["analyze"]["failures"] == 1
    kinds = {p["kind"] for p in round_["proposals"]}
    assert {"recipe", "system_prompt"} <= kinds  # the train task failed without finishing
    rid = round_["id"]

    early = _cli("round", "continue", rid, home=home)
    assert early.returncode == 2 and "waits for decisions" in early.stderr
    assert _cli("round", "approve", rid, "--all", "--by", "ann", home=home).returncode == 0
    twice = _cli("round", "reject", rid, "--proposal", round_["proposals"][0]["id"], "--by", "bo", "--note", "no", home=home)
    assert twice.returncode == 2 and "already approved by ann" in twice.stderr

    done = _cli("round", "continue", rid, "--json", home=home)
    assert done.returncode == 0, done.stderr
    gated = json.loads(done.stdout)
    assert gated["status"] == "gated" and gated["release"] == "embedded-sft-r1"
    assert gated["results"]["gate"]["passed"] is False  # 0 of 1 before and after: no rise
    revised = Path(gated["results"]["revise"]["harness"])
    assert check_revision(revised) == [] and "call finish and say why" in revision.load_revision(revised).system_prompt
    manifest = releases.load_manifest(home, "embedded-sft-r1")
    assert manifest.parent == "embedded-sft" and manifest.data["recipe"]["name"] == "round-1"
    with TrajectoryStore(store, create=False) as db:
        demos = db.query()
        collected = [s for s in demos if s.collection == gated["results"]["collect"]["collection"]]
    assert collected and all(s.harness_release == gated["results"]["revise"]["harness_release"] for s in collected)

    held = _cli("round", "approve", rid, "--by", "ann", home=home)
    assert held.returncode == 2 and "the gate held its release back" in held.stderr

    # The same round had its gate passed (as a rise on held-out tasks would): a person promotes it, once.
    with RoundStore(home / "rounds.sqlite") as rounds:
        passed = {**gated["results"]["gate"], "passed": True, "reasons": []}
        after = {**gated["results"]["bench_after"]["categories"]["overall"], "rate": 1.0, "successes": 1}
        rounds.finish_stage(rid, "bench_after", {**gated["results"]["bench_after"],
                                                 "categories": {**gated["results"]["bench_after"]["categories"], "overall": after}})
        rounds.finish_stage(rid, "gate", passed, status=Status.gated)
    promoted = _cli("round", "approve", rid, "--by", "ann", "--note", "ok", home=home)
    assert promoted.returncode == 0, promoted.stderr
    assert releases.default_release(home) == "embedded-sft-r1"
    kept = revision.promoted(home)
    assert kept is not None and kept.name == rid and revision.load_revision(kept).digest == revision.load_revision(revised).digest
    again = _cli("round", "approve", rid, "--by", "bo", home=home)
    assert again.returncode == 2 and "already promoted by ann" in again.stderr

    report = tmp_path / "rounds.html"
    assert _cli("round", "report", "--out", str(report), home=home).returncode == 0
    page = report.read_text()
    assert "Round 1" in page and "embedded-sft-r1" in page and page.count("<svg") == 2 and page.count('class="legend"') == 2
    assert ">round 1</text>" in page  # the x axis counts rounds
