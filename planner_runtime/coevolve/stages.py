"""A round's stages, each a ``planner-agent`` command run as its own process, recorded as it ends.

``start`` benches the starting release on the train split (the failures analysis reads) and on
the test split (the baseline), then analyzes the train-split failures into proposals, and stops
for a person to decide each. ``continue`` then revises the harness (a copy of the one in use
with the approved harness proposals applied) and the recipe (the approved re-weightings),
collects verified demos under the revised harness, builds the dataset, trains from the starting
release, and benches the new release under the revised harness on the same test tasks; the gate
compares it with the baseline. A stage that ends is recorded with its outputs and never run
again, so ``continue`` after a failure or a Ctrl-C starts at the stage that did not finish.

Every stage's command line and its whole output are kept in the round's folder
(``$PLANNER_AGENT_HOME/rounds/<round>/logs/``), so what a round did can be read and re-run.
Analysis reads the train split only: the held-out templates never shape a proposal.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Sequence

from planner_runtime.coevolve.gate import gate
from planner_runtime.coevolve.rounds import Round, RoundError, RoundStore, Status
from planner_runtime.config import child_environment

HARNESS_ENV = "PLANNER_AGENT_HARNESS_DIR"
Runner = Callable[[list[str], dict[str, str], Path], subprocess.CompletedProcess]


def command_runner(program: Sequence[str]) -> Runner:
    """Run ``program ARGS`` (the ``planner-agent`` command, as the CLI that wires a round gives
    it); stdout is returned, stderr goes to the stage's log after the command line."""

    def run(args: list[str], env: dict[str, str], log: Path) -> subprocess.CompletedProcess:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w", encoding="utf-8") as errors:
            errors.write("$ " + shlex.join(["planner-agent", *args]) + "\n")
            errors.flush()
            return subprocess.run([*program, *args], stdout=subprocess.PIPE, stderr=errors, text=True,
                                  env=child_environment(env), check=False)

    return run


def folder(home: Path, round_: Round) -> Path:
    return home / "rounds" / round_.id


class Stages:
    """The stages of one round; ``runner`` starts a command (tests may watch what it runs)."""

    def __init__(self, rounds: RoundStore, home: Path, runner: Runner) -> None:
        self.rounds = rounds
        self.home = home
        self.runner = runner

    # -- helpers -------------------------------------------------------------------------------
    def _run(self, round_: Round, stage: str, args: list[str], *, revised: bool = False) -> dict[str, Any]:
        root = folder(self.home, round_)
        env = {"PLANNER_AGENT_HOME": str(self.home)}
        if revised:
            env[HARNESS_ENV] = str(root / "revised" / "harness")
        self.rounds.log(round_.id, stage, "$ " + shlex.join(["planner-agent", *args]))
        log = root / "logs" / f"{stage}.log"
        done = self.runner(args, env, log)
        if done.returncode != 0:
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] if log.is_file() else []
            raise RoundError(f"round {round_.id}: stage {stage} failed (exit {done.returncode}): "
                             f"{tail[0] if tail else 'no output'}; its log is {log}; "
                             f"`planner-agent round continue {round_.id}` runs it again")
        try:
            return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
        except (ValueError, IndexError) as exc:
            raise RoundError(f"round {round_.id}: stage {stage} printed no JSON report; its log is {log}") from exc

    def _common(self, round_: Round) -> list[str]:
        o = round_.options
        out = ["--store", o["store"]]
        if o.get("suite"):
            out += ["--suite", o["suite"]]
        if o.get("policy"):
            out += ["--policy", o["policy"]]
        for task in o.get("tasks") or []:
            out += ["--task", task]
        return out

    def _bench(self, round_: Round, stage: str, split: str, release: str, *, revised: bool = False) -> dict[str, Any]:
        o = round_.options
        args = ["bench", "--split", split, "--planner", "local", "--release", release, "-n", str(o["phones"]), "--json",
                *self._common(round_)]
        if o.get("max_steps"):
            args += ["--max-steps", str(o["max_steps"])]
        report = self._run(round_, stage, args, revised=revised)
        label, figures = next(iter(report["planners"].items()))
        return {"bench": report["bench"], "label": label, "collection": figures["collection"],
                "categories": figures["categories"], "domains": figures["domains"]}

    # -- start: bench, bench, analyze ----------------------------------------------------------
    def start(self, round_: Round) -> Round:
        if "bench_train" not in round_.results:
            round_ = self.rounds.finish_stage(round_.id, "bench_train", self._bench(round_, "bench_train", "train", round_.from_release))
        if "bench_test" not in round_.results:
            round_ = self.rounds.finish_stage(round_.id, "bench_test", self._bench(round_, "bench_test", "test", round_.from_release))
        if "analyze" not in round_.results:
            round_ = self._analyze(round_)
        return round_

    def _analyze(self, round_: Round) -> Round:
        from planner_runtime.coevolve.proposals import load_proposal

        from planner_runtime.coevolve.revise import prepare

        root = folder(self.home, round_)
        out = root / "proposals"
        if out.exists():  # left by an analysis that did not finish: it runs again from the start
            shutil.rmtree(out)
        harness, recipe = prepare(root, base_recipe=Path(round_.options["recipe"]) if round_.options.get("recipe") else None,
                                  name=f"round-{round_.number}")
        args = ["analyze", round_.results["bench_train"]["collection"], "--store", round_.options["store"], "--out", str(out),
                "--recipe", str(recipe), "--harness", str(harness), "--json"]
        if round_.options.get("suite"):
            args += ["--suite", round_.options["suite"]]
        report = self._run(round_, "analyze", args)
        found = []
        for path in sorted(out.glob("*.json")):
            if path.name == "analysis.json":
                continue
            proposal = load_proposal(path)
            found.append((proposal.id, proposal.kind, str(path), proposal.summary))
        self.rounds.add_proposals(round_.id, found)
        status = Status.deciding if found else Status.training
        analysis = report.get("analysis", {})
        summary = {k: analysis.get(k) for k in ("attempts", "failures", "infra", "unscored")}
        return self.rounds.finish_stage(round_.id, "analyze", {"proposals": len(found), **summary, "notes": report.get("notes", [])},
                                        status=status)

    # -- continue: revise, collect, build, train, bench, gate -----------------------------------
    def advance(self, round_: Round) -> Round:
        if round_.status is Status.deciding:
            if round_.undecided:
                raise RoundError(f"round {round_.id} waits for decisions on {len(round_.undecided)} proposals "
                                 f"({', '.join(round_.undecided[:5])}): `planner-agent round approve|reject {round_.id} --proposal ID --by NAME`")
            self.rounds.reopen(round_.id, Status.training, allowed=(Status.deciding,))
            round_ = self.rounds.get(round_.id)
        if round_.status is Status.started:
            round_ = self.start(round_)
            if round_.status is not Status.training:
                return round_
        if round_.status is not Status.training:
            raise RoundError(f"round {round_.id} is {round_.status.value}: nothing left to run")
        steps: list[tuple[str, Callable[[Round], Round]]] = [
            ("revise", self._revise), ("collect", self._collect), ("build", self._build), ("train", self._train),
            ("bench_after", self._bench_after), ("gate", self._gate)]
        for stage, step in steps:
            if stage not in round_.results:
                round_ = step(round_)
        return round_

    def _revise(self, round_: Round) -> Round:
        from planner_runtime.coevolve.revise import revise

        approved = [Path(p.path) for p in round_.proposals if p.decision.value == "approved"]
        return self.rounds.finish_stage(round_.id, "revise", revise(folder(self.home, round_), approved))

    def _collect(self, round_: Round) -> Round:
        o = round_.options
        args = ["collect", "--planner", "demo", "--split", "train", "-k", str(o["repeats"]), "-n", str(o["phones"]), "--json",
                *self._common(round_)]
        report = self._run(round_, "collect", args, revised=True)
        return self.rounds.finish_stage(round_.id, "collect", report)

    def _build(self, round_: Round) -> Round:
        from planner_runtime.coevolve.revise import with_collection

        root = folder(self.home, round_)
        data = root / "data"
        if data.exists():  # left by a build that did not finish
            shutil.rmtree(data)
        recipe = with_collection(Path(round_.results["revise"]["recipe"]), round_.results["collect"]["collection"])
        report = self._run(round_, "build", ["data", "build", "--recipe", str(recipe), "--store", round_.options["store"],
                                             "--out", str(root / "data"), "--json"])
        return self.rounds.finish_stage(round_.id, "build", report)

    def _train(self, round_: Round) -> Round:
        o = round_.options
        name = o["release"]
        args = ["train", "sft", "--store", o["store"], "--dataset", str(folder(self.home, round_) / "data"),
                "--base", f"release:{round_.from_release}", "--out", name, "--json", *o.get("train_args", [])]
        if any((self.home / "training" / name).glob("checkpoint-*")):
            args.append("--resume")  # a training the round started before stopped: it goes on
        if (self.home / "releases" / name / "manifest.json").is_file():  # trained, but the round stopped before recording it
            manifest = json.loads((self.home / "releases" / name / "manifest.json").read_text(encoding="utf-8"))
        else:
            manifest = self._run(round_, "train", args, revised=True)
        return self.rounds.finish_stage(round_.id, "train", {"release": name, "data": manifest.get("data", {})}, release=name)

    def _bench_after(self, round_: Round) -> Round:
        outputs = self._bench(round_, "bench_after", "test", round_.options["release"], revised=True)
        return self.rounds.finish_stage(round_.id, "bench_after", outputs)

    def _gate(self, round_: Round) -> Round:
        verdict = gate(round_.results["bench_test"]["categories"], round_.results["bench_after"]["categories"])
        return self.rounds.finish_stage(round_.id, "gate", verdict.to_json(), status=Status.gated)


def promote_round(rounds: RoundStore, home: Path, round_: Round, *, by: str, note: str = "", cache_dir: Path | None = None) -> Round:
    """A person's final approval: the round's release becomes the default and its harness revision
    the harness in use. Refused unless the gate passed; a second approval is refused, naming the first."""
    from planner_runtime.harness import revision
    from planner_runtime.training import promotion, releases

    if round_.status is Status.gated and not round_.results["gate"]["passed"]:
        raise RoundError(f"round {round_.id}: the gate held its release back ({'; '.join(round_.results['gate']['reasons'])}); "
                         f"`planner-agent round reject {round_.id} --by NAME` closes it")
    if round_.status is Status.gated:
        releases.verify(home, releases.load_manifest(home, round_.release or ""), cache_dir)
    closed = rounds.close_round(round_.id, Status.promoted, by=by, note=note, allowed=(Status.gated,))
    before, after = closed.results["bench_test"]["categories"]["overall"], closed.results["bench_after"]["categories"]["overall"]
    evidence = promotion.BenchEvidence(
        bench=f"{closed.results['bench_after']['bench']} (baseline {closed.results['bench_test']['bench']})", split="test",
        release=closed.release or "", rate=after["rate"], n=after["n"], default=closed.from_release,
        default_rate=before["rate"], default_n=before["n"], categories=closed.results["bench_after"]["categories"])
    kept = home / "harness" / closed.id  # the round's folder may be cleaned up; the promoted harness stays
    try:
        if not kept.exists():
            shutil.copytree(closed.results["revise"]["harness"], kept)
        revision.load_revision(kept)
        promotion.promote(home, closed.release or "", by=closed.approved_by or by, evidence=evidence, cache_dir=cache_dir)
        revision.promote(home, kept)
    except Exception as exc:
        rounds.log(closed.id, "promote", f"failed after approval: {exc}")
        raise RoundError(f"round {closed.id} is approved but promoting it failed: {exc}; "
                         f"`planner-agent releases promote {closed.release} ...` can finish it by hand") from exc
    rounds.log(closed.id, "promote", f"release {closed.release} is the default; harness {kept}")
    return closed
