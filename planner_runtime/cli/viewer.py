"""``planner-agent view``: write a trajectory (or every failed one) as a self-contained HTML page.

Screenshots come from the content-addressed artifact folder when the artifact module and the
files are there; a page without them still shows everything else.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import fail
from planner_runtime.config import Settings
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.viewer.page import ScreenshotReader, render_page


def artifact_reader(root: Path | None = None) -> ScreenshotReader | None:
    """Read screenshots from the artifact store (``root``, else the configured one)."""
    try:
        from planner_runtime.trajectories.artifacts import ArtifactStore
    except ImportError:  # a runtime without the artifact store: pages show no screenshots
        return None
    store = ArtifactStore(root) if root is not None else ArtifactStore.default()

    def read(ref: str) -> tuple[bytes, str] | None:
        try:
            return store.get(ref), store.media_type(ref)
        except PlannerRuntimeError:
            return None

    return read


def view(
    trajectory_id: Optional[str] = typer.Argument(None, help="A stored trajectory id."),
    failed: bool = typer.Option(False, "--failed", help="Every failed trajectory on one page (with --since/--until)."),
    since: Optional[datetime] = typer.Option(None, "--since", help="With --failed: started at or after this date."),
    until: Optional[datetime] = typer.Option(None, "--until", help="With --failed: started before this date."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file to write (default: <id>.html or failed.html)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Trajectory store (SQLite file)."),
    artifacts: Optional[Path] = typer.Option(None, "--artifacts", help="Artifact folder (default: the configured one)."),
    as_json: bool = typer.Option(False, "--json", help="Print only what was written, as JSON."),
) -> None:
    """Write a self-contained HTML page of a trajectory: verdict and evidence, every step, screenshots."""
    from planner_runtime.trajectories.store import TrajectoryStore

    if (trajectory_id is None) == (not failed):
        raise fail("give a trajectory id or --failed (not both)")
    try:
        with TrajectoryStore(store or Settings.from_env().store_path, create=False) as db:
            if failed:
                trajs = [db.get(i) for i in db.ids(success=False, since=since, until=until)]
            else:  # a trajectory and the sub-agent episodes it delegated, every level down
                trajs = [db.get(trajectory_id)] + [db.get(child) for child in db.descendants(trajectory_id)]
            usage = {t.id: db.usage(t.id) for t in trajs}  # tokens with the sub-agents', also those not on the page
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    title = "Failed trajectories" + (f" since {since:%Y-%m-%d %H:%M}" if since else "") if failed else None
    page = render_page(trajs, screenshots=artifact_reader(artifacts), title=title, usage=usage)
    path = out or Path(f"{trajectory_id}.html" if trajectory_id else "failed.html")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise fail(f"--out {path}: cannot write it: {exc.strerror or exc}") from exc
    steps = sum(len(t.steps) for t in trajs)
    if as_json:
        print(json.dumps({"path": str(path), "trajectories": [t.id for t in trajs], "steps": steps}))
        return
    print(f"wrote {path} ({len(trajs)} {'trajectory' if len(trajs) == 1 else 'trajectories'}, {steps} steps)")

