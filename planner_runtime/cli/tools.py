"""``planner-agent tools list``: every tool the harness can offer, with its functional domain, the
app or simulated service it works through, and its source (see :mod:`planner_runtime.harness.catalogue`).

With ``--json`` stdout holds only the JSON document. A broken family file or skill, or a name
declared twice, is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.markup import escape

from planner_runtime.cli.common import console, err, fail
from planner_runtime.errors import PlannerRuntimeError

tools_app = typer.Typer(help="The tool catalogue: phone apps' tools, simulated services', general ones, skills' composites.",
                        no_args_is_help=True)

SOURCES = ("app", "simulated", "general", "skill")


@tools_app.command("list")
def tools_list(
    domain: Optional[str] = typer.Option(None, "--domain", help="Only this functional domain (e.g. finance, travel, general)."),
    source: Optional[str] = typer.Option(None, "--source", help=f"Only this source: {', '.join(SOURCES)}."),
    as_json: bool = typer.Option(False, "--json", help="Print the tools as JSON (only JSON on stdout)."),
) -> None:
    """List every tool with its domain, app or service, and source; then the count per domain."""
    from planner_runtime.harness.catalogue import catalogue, per_domain

    if source is not None and source not in SOURCES:
        raise fail(f"--source {source!r}: choose one of {', '.join(SOURCES)}")
    try:
        entries = catalogue()
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    domains = set(per_domain(entries))
    if domain is not None and domain not in domains:
        raise fail(f"--domain {domain!r}: no such domain; known: {', '.join(sorted(domains))}")
    chosen = [e for e in entries if (domain is None or e.domain == domain) and (source is None or e.source == source)]
    if as_json:
        print(json.dumps([e.to_json() for e in chosen], indent=2, ensure_ascii=False))
        return
    for e in chosen:
        flag = f" [yellow]({e.sensitive})[/yellow]" if e.sensitive else ""
        console.print(f"[bold]{e.name}[/bold]  [dim]{e.domain}/{escape(e.app or '-')}/{e.source}[/dim]{flag}  "
                      f"{escape(e.description)}", soft_wrap=True)
    counts = per_domain(chosen)
    err.print(f"{len(chosen)} tools in {len(counts)} domains: "
              + ", ".join(f"{d} {n}" for d, n in counts.items()), markup=False, highlight=False, soft_wrap=True)
