"""``planner-agent round start|continue|status|approve|reject|report``: co-evolution rounds.

A round benches a release, analyzes its train-split failures into proposals (recipe
re-weightings, skill text, tool descriptions, the system prompt), waits for a person to approve
or reject each, then revises the harness and the recipe, collects, builds data, trains, benches
the new release on the held-out templates and gates it; a person's final approval promotes the
release and its harness together (see :mod:`planner_runtime.coevolve.stages`).

Exit status: 0 when the step asked for was done (a round that stops for decisions included),
1 when a stage ran and failed (the round keeps everything it finished; ``continue`` runs the
stage again), 2 for a usage error (an unknown round, release or proposal, a decision already
made), 130 on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import ExitCode, console, err, fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError

round_app = typer.Typer(help="Co-evolution rounds: bench → proposals → a person decides → train → bench → a person promotes.",
                        no_args_is_help=True)


def _rounds(settings: Settings):  # noqa: ANN202 - -> RoundStore
    from planner_runtime.coevolve.rounds import RoundStore

    return RoundStore(settings.home / "rounds.sqlite")


def _show(round_, as_json: bool) -> None:  # noqa: ANN001 - coevolve.rounds.Round
    if as_json:
        print(json.dumps(round_.to_json()))
        return
    gate = round_.results.get("gate")
    console.print(f"round {round_.number} ({round_.id}): {round_.status.value}; from {round_.from_release}"
                  + (f" to {round_.release}" if round_.release else "") + (f"; last stage {round_.stage}" if round_.stage else ""),
                  soft_wrap=True, markup=False)
    for stage in ("bench_test", "bench_after"):
        overall = round_.results.get(stage, {}).get("categories", {}).get("overall")
        if overall and overall.get("n"):
            console.print(f"  {stage}: held-out success {overall['rate']:.1%} ({overall['successes']}/{overall['n']}), "
                          f"bench {round_.results[stage]['bench']}", soft_wrap=True, markup=False)
    if gate is not None:
        console.print(f"  gate: {'passed' if gate['passed'] else 'held back'}: {'; '.join(gate['reasons']) or 'every category held'}",
                      soft_wrap=True, markup=False)
    for p in round_.proposals:
        who = f" by {p.decided_by}" if p.decided_by else ""
        console.print(f"  [{p.decision.value}{who}] {p.proposal_id} ({p.kind}): {p.summary}", soft_wrap=True, markup=False)
    if round_.approved_by:
        console.print(f"  {round_.status.value} by {round_.approved_by} at {round_.approved_at:%Y-%m-%d %H:%M:%S}Z",
                      soft_wrap=True, markup=False)


def _next_step(round_) -> str:  # noqa: ANN001
    from planner_runtime.coevolve.rounds import Status

    if round_.status is Status.deciding:
        return (f"decide each proposal: planner-agent round approve {round_.id} --proposal ID --by NAME "
                f"(or reject), then planner-agent round continue {round_.id}")
    if round_.status is Status.gated:
        return (f"planner-agent round approve {round_.id} --by NAME promotes {round_.release}" if round_.results["gate"]["passed"]
                else f"the gate held it back: planner-agent round reject {round_.id} --by NAME --note WHY closes it")
    return ""


def _drive(action, settings: Settings, as_json: bool) -> None:  # noqa: ANN001 - (Stages) -> Round
    from planner_runtime.coevolve.rounds import RoundError
    from planner_runtime.coevolve.stages import Stages, command_runner

    try:
        with _rounds(settings) as rounds:
            # each stage is this same command in its own process, with this interpreter
            round_ = action(Stages(rounds, settings.home, command_runner([sys.executable, "-m", "planner_runtime.cli"])), rounds)
    except KeyboardInterrupt:
        err.print("interrupted: the round keeps every stage it finished; `planner-agent round continue ROUND` goes on",
                  soft_wrap=True, markup=False)
        raise typer.Exit(ExitCode.interrupted) from None
    except RoundError as exc:
        raise fail(str(exc), ExitCode.failed if "failed (exit" in str(exc) else ExitCode.usage) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    _show(round_, as_json)
    if (hint := _next_step(round_)) and not as_json:
        console.print(hint, soft_wrap=True, markup=False)


@round_app.command("start")
def round_start(
    from_release: str = typer.Option(..., "--from", help="The release to start from (its name, as `releases list` shows)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store every stage reads and writes."),
    suite: Optional[Path] = typer.Option(None, "--suite", help="A task suite YAML file (default: the built-in one)."),
    task: Optional[list[str]] = typer.Option(None, "--task", help="Only these task ids in every bench and collection (repeat)."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="YAML safety policy for every episode (allow: [send, pay, ...])."),
    phones: int = typer.Option(2, "--phones", "-n", min=1, help="Episodes in parallel."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Step limit of every bench episode."),
    repeats: int = typer.Option(1, "--repeats", "-k", min=1, help="Demos per train task collected under the revised harness."),
    recipe: Optional[Path] = typer.Option(None, "--recipe", help="The recipe the round's re-weightings start from (default: every verified demo, 4 a task)."),
    out: Optional[str] = typer.Option(None, "--out", help="The new release's name (default: <from>-r<round number>)."),
    train_arg: Optional[list[str]] = typer.Option(None, "--train-arg", help="An option for `train sft` (repeat), e.g. --train-arg=--epochs --train-arg=1."),
    as_json: bool = typer.Option(False, "--json", help="Print the round as JSON."),
) -> None:
    """Start a round: bench the release (train and test split), analyze its failures into proposals."""
    from planner_runtime.training import releases

    settings = Settings.from_env()
    path = store or settings.store_path
    for given, what in ((suite, "--suite"), (policy, "--policy"), (recipe, "--recipe")):
        if given is not None and not given.is_file():
            raise fail(f"{what} {given}: no such file")
    if not path.parent.is_dir():
        raise fail(f"--store {path}: folder {path.parent} does not exist")
    try:
        releases.load_manifest(settings.home, from_release)
        if out is not None and releases.release_path(settings.home, out).exists():
            raise fail(f"--out {out}: a release of that name exists")
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    options = {"store": str(path.resolve()), "suite": str(suite.resolve()) if suite else None, "tasks": list(task or []),
               "policy": str(policy.resolve()) if policy else None, "phones": phones, "max_steps": max_steps, "repeats": repeats,
               "recipe": str(recipe.resolve()) if recipe else None, "train_args": list(train_arg or [])}

    def action(stages, rounds):  # noqa: ANN001, ANN202
        round_ = rounds.new_round(from_release, {**options, "release": out})
        err.print(f"round {round_.id}: benching {from_release}, then analyzing its failures", soft_wrap=True, markup=False)
        return stages.start(round_)

    _drive(action, settings, as_json)


@round_app.command("continue")
def round_continue(round_id: str = typer.Argument(..., help="The round (its id or number)."),
                   as_json: bool = typer.Option(False, "--json", help="Print the round as JSON.")) -> None:
    """Run the round's next stages: after the decisions, revise, collect, build, train, bench, gate."""
    _drive(lambda stages, rounds: stages.advance(rounds.get(round_id)), Settings.from_env(), as_json)


@round_app.command("status")
def round_status(round_id: Optional[str] = typer.Argument(None, help="A round (id or number); default: every round."),
                 as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Where a round stands: its stages, scores, proposals and decisions."""
    settings = Settings.from_env()
    if not (settings.home / "rounds.sqlite").is_file():
        raise fail("no round yet: planner-agent round start --from RELEASE")
    try:
        with _rounds(settings) as rounds:
            found = [rounds.get(round_id)] if round_id else rounds.all()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([r.to_json() for r in found] if round_id is None else found[0].to_json()))
        return
    for r in found:
        _show(r, False)


def _decide(round_id: str, proposal: list[str], every: bool, by: str, note: str, approve: bool) -> None:
    from planner_runtime.coevolve.rounds import Decision, RoundError, Status
    from planner_runtime.coevolve.stages import promote_round

    settings = Settings.from_env()
    try:
        with _rounds(settings) as rounds:
            round_ = rounds.get(round_id)
            chosen = round_.undecided if every else proposal
            if every and not chosen:
                raise RoundError(f"round {round_.id} has no undecided proposal")
            for pid in chosen:
                rounds.decide(round_.id, pid, Decision.approved if approve else Decision.rejected, by=by, note=note)
                console.print(f"{pid}: {'approved' if approve else 'rejected'} by {by}", soft_wrap=True, markup=False)
            if chosen:
                left = rounds.get(round_.id).undecided
                console.print(f"{len(left)} proposals left to decide" if left else
                              f"every proposal is decided: planner-agent round continue {round_.id}", soft_wrap=True, markup=False)
                return
            if approve:
                closed = promote_round(rounds, settings.home, round_, by=by, note=note, cache_dir=settings.cache_dir)
                console.print(f"round {closed.id} approved by {closed.approved_by}: release {closed.release} is the default "
                              f"and its harness revision is in use", soft_wrap=True, markup=False)
            else:
                if not note.strip():
                    raise RoundError("--note: say why the round is rejected")
                allowed = tuple(s for s in Status if s not in (Status.promoted, Status.rejected))
                rounds.close_round(round_.id, Status.rejected, by=by, note=note, allowed=allowed)
                console.print(f"round {round_.id} rejected by {by}", soft_wrap=True, markup=False)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc


@round_app.command("approve")
def round_approve(
    round_id: str = typer.Argument(..., help="The round (its id or number)."),
    proposal: Optional[list[str]] = typer.Option(None, "--proposal", help="Approve this proposal (repeat); without it, approve the round's release."),
    every: bool = typer.Option(False, "--all", help="Approve every undecided proposal."),
    by: str = typer.Option(..., "--by", help="Who approves."),
    note: str = typer.Option("", "--note", help="Why, for the record."),
) -> None:
    """Approve proposals, or (without --proposal) the round's release: it becomes the default."""
    _decide(round_id, list(proposal or []), every, by, note, True)


@round_app.command("reject")
def round_reject(
    round_id: str = typer.Argument(..., help="The round (its id or number)."),
    proposal: Optional[list[str]] = typer.Option(None, "--proposal", help="Reject this proposal (repeat); without it, reject the round."),
    every: bool = typer.Option(False, "--all", help="Reject every undecided proposal."),
    by: str = typer.Option(..., "--by", help="Who rejects."),
    note: str = typer.Option("", "--note", help="Why (required to reject a round)."),
) -> None:
    """Reject proposals, or (without --proposal) the whole round."""
    _decide(round_id, list(proposal or []), every, by, note, False)


@round_app.command("report")
def round_report(out: Path = typer.Option(Path("rounds.html"), "--out", help="The HTML file to write.")) -> None:
    """Write every round's scores and decisions as one self-contained HTML page with charts."""
    from planner_runtime.coevolve.report import render

    settings = Settings.from_env()
    if not out.parent.is_dir():
        raise fail(f"--out {out}: folder {out.parent} does not exist")
    try:
        with _rounds(settings) as rounds:
            page = render(rounds.all())
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    out.write_text(page, encoding="utf-8")
    console.print(f"wrote {out}", markup=False)
