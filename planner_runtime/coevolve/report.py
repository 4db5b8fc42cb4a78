"""The rounds report: one self-contained HTML page charting held-out success over rounds.

For each round: the starting release's held-out success and the round's release's, overall and
per category, the gate's verdict, who decided what and when. The charts are inline SVG
(:mod:`planner_runtime.training.svg_chart`) and the page carries the viewer's policy forbidding
scripts and fetches: proposal summaries and notes are written by people and tools, and are
escaped like any other untrusted text.
"""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

from planner_runtime.coevolve.rounds import Round
from planner_runtime.training.svg_chart import Series, line_chart
from planner_runtime.viewer.style import CSP

CATEGORIES = ("overall", "tool", "memory", "skills", "subagent")
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
.pass { color: #1a7f37; font-weight: 600; } .fail { color: #cf222e; font-weight: 600; }
.legend span { display: inline-block; margin-right: 1.2em; } .swatch { display: inline-block; width: 0.9em; height: 0.9em; }
svg text { font-size: 11px; fill: #444; } .meta { color: #57606a; }
"""


def _group(round_: Round, stage: str, category: str) -> dict[str, Any] | None:
    group = round_.results.get(stage, {}).get("categories", {}).get(category)
    return group if group and group.get("n") else None


def _rate(round_: Round, stage: str, category: str = "overall") -> float | None:
    group = _group(round_, stage, category)
    return None if group is None else group.get("rate")


def _cell(group: dict[str, Any] | None) -> str:
    if group is None:
        return "–"
    return f"{100 * group['rate']:.0f}% [{100 * group['ci_low']:.0f}–{100 * group['ci_high']:.0f}%] {group['successes']}/{group['n']}"


def _round_section(r: Round) -> str:
    gate = r.results.get("gate")
    verdict = ("–" if gate is None else
               f'<span class="{"pass" if gate["passed"] else "fail"}">{"passed" if gate["passed"] else "held back"}</span> '
               + escape("; ".join(gate["reasons"])))
    rows = "".join(f"<tr><th>{escape(c)}</th><td>{_cell(_group(r, 'bench_test', c))}</td><td>{_cell(_group(r, 'bench_after', c))}</td></tr>"
                   for c in CATEGORIES)
    decided = "".join(
        f"<tr><td>{escape(p.proposal_id)}</td><td>{escape(p.kind)}</td><td>{escape(p.summary)}</td><td>{escape(p.decision.value)}</td>"
        f"<td>{escape(p.decided_by or '')}</td><td>{escape(p.note)}</td></tr>" for p in r.proposals)
    approval = (f"{escape(r.status.value)} by {escape(r.approved_by)} at {r.approved_at:%Y-%m-%d %H:%M}Z" if r.approved_by
                else escape(r.status.value))
    return (f'<section id="{escape(r.id)}"><h2>Round {r.number} <span class="meta">{escape(r.id)}</span></h2>'
            f"<p>from <b>{escape(r.from_release)}</b> to <b>{escape(r.release or '–')}</b>; {approval}; gate: {verdict}</p>"
            f"<table><tr><th>held-out</th><th>{escape(r.from_release)} (baseline)</th><th>{escape(r.release or 'after')}</th></tr>{rows}</table>"
            + (f"<table><tr><th>proposal</th><th>kind</th><th>summary</th><th>decision</th><th>by</th><th>note</th></tr>{decided}</table>"
               if r.proposals else "<p class=\"meta\">no proposals</p>")
            + "</section>")


def render(rounds: Sequence[Round]) -> str:
    """The page for ``rounds`` (oldest first)."""
    xs = [float(r.number) for r in rounds]
    chart = line_chart("overall", "held-out success over rounds", xs, [
        Series("baseline", tuple(_rate(r, "bench_test") for r in rounds)),
        Series("after the round", tuple(_rate(r, "bench_after") for r in rounds))], y_range=(0.0, 1.0), x_label="round")
    per_category = line_chart("categories", "held-out success per category after each round", xs, [
        Series(c, tuple(_rate(r, "bench_after", c) for r in rounds)) for c in CATEGORIES[1:]], y_range=(0.0, 1.0), x_label="round")
    head = ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>co-evolution rounds</title><style>{_CSS}</style></head><body><h1>Co-evolution rounds</h1>")
    if not rounds:
        return head + "<p>No round yet: <code>planner-agent round start --from RELEASE</code>.</p></body></html>"
    return (head + chart + per_category
            + "".join(_round_section(r) for r in rounds) + "</body></html>")
