"""``planner-agent review``: the review queue from the terminal, and its web app.

``flag`` queues what needs a person (safety, conflict, low confidence); ``list`` shows the queue;
``show ID`` an item, its decisions and the episode's steps; ``decide ID`` approves, rejects or
relabels it; ``serve`` opens the queue in a browser (loopback only unless ``--allow-remote``).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from planner_runtime.cli.common import console, err, fail, print_step, print_summary, serve_until_interrupted
from planner_runtime.config import Settings
from planner_runtime.data.review import LOGPROB_THRESHOLD
from planner_runtime.errors import PlannerRuntimeError

review_app = typer.Typer(help="The review queue: flag trajectories for a person, list, show and decide them, or serve the web app.",
                         no_args_is_help=True)

STORE_HELP = "Trajectory store (SQLite file); it must exist."


def _open(store: Path | None):  # noqa: ANN202 - an open TrajectoryStore
    from planner_runtime.trajectories.store import TrajectoryStore

    return TrajectoryStore(store or Settings.from_env().store_path, create=False)


def _label(value: bool | None) -> str:
    return "-" if value is None else ("success" if value else "failure")


@review_app.command("flag")
def flag_command(
    collection: Optional[str] = typer.Option(None, "--collection", help="Only this `collect` run's trajectories."),
    since: Optional[datetime] = typer.Option(None, "--since", help="Only trajectories started at or after this date (UTC)."),
    logprob_threshold: float = typer.Option(LOGPROB_THRESHOLD, "--logprob-threshold",
                                            help="Low confidence below this mean log-probability per sampled token."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the items added as JSON."),
) -> None:
    """Queue every trajectory that needs a person: a sensitive action (safety), repeats that disagree
    (conflict), a verdict resting on the answer text alone or low token log-probabilities (low confidence).
    Running it again adds only what is new."""
    from planner_runtime.data.review.queue import flag

    try:
        with _open(store) as db:
            report = flag(db, collection=collection, since=since, logprob_threshold=logprob_threshold)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps({"added": [i.as_json() for i in report.added], "flags": report.found}, indent=2))
        return
    for item in report.added:
        console.print(f"{item.id}  {item.reason:<14} {item.trajectory_id}  {escape(item.detail[:100])}", soft_wrap=True)
    console.print(f"{len(report.added)} item(s) added; {report.found - len(report.added)} flag(s) were queued already", soft_wrap=True)


@review_app.command("list")
def list_command(
    reason: Optional[str] = typer.Option(None, "--reason", help="safety, conflict, low_confidence or manual."),
    status: Optional[str] = typer.Option(None, "--status", help="open or resolved."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most N items."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (one object per item)."),
) -> None:
    """The queue in review order (highest priority first), filtered by reason and status."""
    from planner_runtime.data.review.queue import items

    try:
        with _open(store) as db:
            rows = items(db, reason=reason, status=status, limit=limit)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps([r.as_json() for r in rows], indent=2))
        return
    if not rows:
        console.print("no items match")
        return
    table = Table(show_edge=False, pad_edge=False)
    for name in ("item", "reason", "prio", "status", "reviews", "leased by", "trajectory", "why"):
        table.add_column(name, no_wrap=name in ("item", "trajectory"))
    for r in rows:
        state = r.status + (f" {r.resolution}" if r.resolution else "") + (f" {_label(r.label_success)}" if r.label_success is not None else "")
        table.add_row(r.id, r.reason, str(r.priority), state, f"{r.reviews}/{r.required_reviews}", escape(r.leased_to() or "-"),
                      r.trajectory_id, escape(r.detail[:80]))
    console.print(table)
    console.print(f"{len(rows)} item(s), {sum(r.status == 'open' for r in rows)} open")


@review_app.command("show")
def show_command(
    item_id: str = typer.Argument(..., help="A review item id (see `review list`)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the item, its decisions and the trajectory as JSON."),
) -> None:
    """An item: why it was flagged, its decisions, and the episode step by step."""
    from planner_runtime.data.review.queue import decisions, get

    try:
        with _open(store) as db:
            item = get(db, item_id)
            made = decisions(db, item_id)
            traj = db.get(item.trajectory_id)
            tokens = db.usage(traj.id)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps({"item": item.as_json(), "decisions": [d.as_json() for d in made],
                          "trajectory": traj.model_dump(mode="json")}, default=str))
        return
    state = item.status + (f" ({item.resolution} {_label(item.label_success)})" if item.resolution else "")
    console.print(f"[bold]{item.id}[/bold]  {item.reason}, priority {item.priority}, {state}, "
                  f"{item.reviews} of {item.required_reviews} review(s)", soft_wrap=True)
    console.print(f"[bold]why:[/bold] {escape(item.detail)}", soft_wrap=True)
    if item.leased_to():
        console.print(f"[bold]leased by:[/bold] {escape(item.leased_to() or '')} until {item.lease_until:%H:%M:%S} UTC")
    for d in made:
        label = f" {_label(d.label_success)}" if d.label_success is not None else ""
        console.print(f"  {d.decided_at:%Y-%m-%d %H:%M:%S}  {escape(d.reviewer)}: {d.decision}{label}  {escape(d.note)}", soft_wrap=True)
    console.print(f"\n[bold]goal:[/bold] {escape(traj.goal)}  [dim]task {traj.task_id or '-'}, {traj.id}[/dim]", soft_wrap=True)
    for step in traj.steps:
        print_step(step)
    print_summary(traj, tokens)


def _decision(approve: bool, reject: bool, relabel: str | None) -> tuple[str, bool | None]:
    if sum((approve, reject, relabel is not None)) != 1:
        raise fail("give exactly one of --approve, --reject, --relabel success|failure")
    if relabel is not None:
        labels = {"success": True, "failure": False}
        if relabel not in labels:
            raise fail(f"--relabel {relabel!r}: give success or failure")
        return "relabel", labels[relabel]
    return ("approve" if approve else "reject"), None


@review_app.command("decide")
def decide_command(
    item_id: str = typer.Argument(..., help="A review item id (see `review list`)."),
    approve: bool = typer.Option(False, "--approve", help="The verifier's verdict stands; keep the trajectory."),
    reject: bool = typer.Option(False, "--reject", help="Keep the trajectory out of every dataset."),
    relabel: Optional[str] = typer.Option(None, "--relabel", help="success or failure: the verdict was wrong."),
    note: str = typer.Option("", "--note", help="Why (kept with the decision)."),
    by: str = typer.Option(..., "--by", help="Your name (a second review must come from someone else)."),
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the item after the decision as JSON."),
) -> None:
    """Approve, reject or relabel an item. A relabel against the verifier, or a decision against an
    earlier one, needs two agreeing reviewers before the item resolves."""
    from planner_runtime.data.review.queue import decide

    decision, label = _decision(approve, reject, relabel)
    try:
        with _open(store) as db:
            outcome = decide(db, item_id, by, decision, label=label, note=note)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    item = outcome.item
    if as_json:
        print(json.dumps({"item": item.as_json(), "decision": outcome.decision.as_json(), "resolved": outcome.resolved}))
        return
    if outcome.resolved:
        console.print(f"{item.id} resolved: {item.resolution}" + (f" as {_label(item.label_success)}" if item.label_success is not None else ""),
                      soft_wrap=True)
    else:
        console.print(f"{item.id}: decision kept; {item.reviews} review(s) so far, {item.required_reviews} agreeing needed: "
                      "it waits for another reviewer", soft_wrap=True)


@review_app.command("serve")
def serve_command(
    store: Optional[Path] = typer.Option(None, "--store", help=STORE_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback only unless --allow-remote)."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port (0: any free port)."),
    artifacts: Optional[Path] = typer.Option(None, "--artifacts", help="Artifact folder for screenshots (default: the configured one)."),
    lease: float = typer.Option(300.0, "--lease", help="Seconds an opened item stays the reviewer's."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Listen on a non-loopback address (the app has no login)."),
) -> None:
    """Serve the review queue as a local web app: the queue, each item's episode, decision controls and keyboard shortcuts."""
    from planner_runtime.viewer.review.server import ReviewServer

    server = ReviewServer(store or Settings.from_env().store_path, host=host, port=port, artifacts=artifacts, lease_s=lease,
                          allow_remote=allow_remote)
    try:
        server.start()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"cannot listen on {host}:{port}: {exc}") from exc
    err.print(f"review queue at {server.url} (Ctrl-C to stop)", markup=False)
    serve_until_interrupted(server.stop)
