"""``planner-agent harness export|check``: the harness's instructions as a revision folder.

``export`` writes the instructions in use (system prompt, tool descriptions, skills) to a new
folder, the starting point of an edit or a round's proposals; ``check`` says whether a folder is
a sound revision. ``PLANNER_AGENT_HARNESS_DIR=DIR`` makes every run, collect and bench read it
(see :mod:`planner_runtime.harness.revision`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from planner_runtime.cli.common import console, err, fail
from planner_runtime.errors import PlannerRuntimeError

harness_app = typer.Typer(help="The harness's instructions (system prompt, tool descriptions, skills) as a revision folder.",
                          no_args_is_help=True)


@harness_app.command("export")
def harness_export(out: Path = typer.Option(..., "--out", help="A new folder to write the revision to.")) -> None:
    """Write the instructions in use now to a new folder."""
    from planner_runtime.harness.revision import load_revision
    from planner_runtime.harness.revision.files import export_current

    try:
        export_current(out)
        revision = load_revision(out)
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    console.print(f"wrote {out}: system prompt, {len(revision.tool_descriptions)} tool descriptions, skills; "
                  f"harness release {revision.release}", soft_wrap=True, markup=False)


@harness_app.command("check")
def harness_check(folder: Path = typer.Argument(..., help="A revision folder.")) -> None:
    """Check a revision folder: its files parse, its tool names exist, its skills load."""
    from planner_runtime.harness.revision import load_revision
    from planner_runtime.harness.revision.files import check_revision

    problems = check_revision(folder)
    for line in problems:
        err.print(line, soft_wrap=True, markup=False)
    if problems:
        raise typer.Exit(2)
    console.print(f"{folder}: sound; harness release {load_revision(folder).release}", soft_wrap=True, markup=False)
