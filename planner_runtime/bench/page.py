"""A bench report as one self-contained HTML page: inline CSS and SVG, no script, no network.

Charts draw one bar per planner and group (its success rate) with a whisker for the 95%
interval, one colour per planner; a group with no scored task draws no bar. The tables under
them hold every figure of :mod:`planner_runtime.bench.report`. Labels and names are escaped: a
planner label or a task domain is text, never markup.
"""

from __future__ import annotations

from html import escape
from typing import Sequence

from planner_runtime.bench.report import CATEGORY_NAMES, PlannerReport, groups_of, rate_cell
from planner_runtime.bench.stats import CATEGORIES, GroupStats

COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0 2em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.legend span { display: inline-block; margin-right: 1.5em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: middle; }
.infra { color: #8a5a00; }
svg text { font-size: 12px; }
"""

_H, _TOP, _BOTTOM, _LEFT = 200, 10, 40, 40  # plot height and margins, px
_BAR, _GAP = 18, 22  # bar width, space between groups


def _chart(chart_id: str, names: Sequence[tuple[str, str]], reports: Sequence[PlannerReport],
           pick: str) -> str:
    """Bars of ``reports``' groups ``names`` ((key, shown)); ``pick``: categories or domains."""
    width = _LEFT + len(names) * (len(reports) * _BAR + _GAP) + _GAP
    parts = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_H + _TOP + _BOTTOM}" '
             f'role="img" aria-label="success rate per group">']
    for tick in (0, 25, 50, 75, 100):
        y = _TOP + _H * (1 - tick / 100)
        parts.append(f'<line x1="{_LEFT}" x2="{width}" y1="{y}" y2="{y}" stroke="#eee"/>'
                     f'<text x="{_LEFT - 4}" y="{y + 4}" text-anchor="end">{tick}%</text>')
    x = _LEFT + _GAP
    for key, shown in names:
        for i, r in enumerate(reports):
            g: GroupStats = getattr(r, pick)[key]
            colour = COLOURS[i % len(COLOURS)]
            if g.n:
                top = _TOP + _H * (1 - (g.rate or 0.0))
                low, high = _TOP + _H * (1 - g.ci_low), _TOP + _H * (1 - g.ci_high)
                mid = x + _BAR / 2
                parts.append(
                    f'<rect class="bar" data-planner="{escape(r.label)}" data-group="{escape(key)}" x="{x}" y="{top:.1f}" '
                    f'width="{_BAR - 2}" height="{_TOP + _H - top:.1f}" fill="{colour}">'
                    f'<title>{escape(r.label)} {escape(shown)}: {escape(rate_cell(g))}</title></rect>'
                    f'<line class="whisker" x1="{mid}" x2="{mid}" y1="{low:.1f}" y2="{high:.1f}" stroke="#222"/>'
                    f'<line x1="{mid - 4}" x2="{mid + 4}" y1="{low:.1f}" y2="{low:.1f}" stroke="#222"/>'
                    f'<line x1="{mid - 4}" x2="{mid + 4}" y1="{high:.1f}" y2="{high:.1f}" stroke="#222"/>')
            x += _BAR
        label_x = x - len(reports) * _BAR / 2
        parts.append(f'<text x="{label_x}" y="{_TOP + _H + 16}" text-anchor="middle">{escape(shown)}</text>')
        x += _GAP
    parts.append("</svg>")
    return "".join(parts)


def _table(reports: Sequence[PlannerReport]) -> str:
    head = "".join(f'<th colspan="5">{escape(r.label)}</th>' for r in reports)
    sub = "".join("<th>success</th><th>steps</th><th>prompt tok</th><th>output tok</th><th>$/1k tasks</th>" for _ in reports)
    rows = []
    for i, (section, name, _) in enumerate(groups_of(reports[0])):
        cells = []
        for r in reports:
            g = groups_of(r)[i][2]
            cells += [rate_cell(g), _n(g.steps, 1), _n(g.prompt_tokens, 0), _n(g.output_tokens, 0), _n(g.usd_per_1k, 2)]
        shown = name if section == "category" else f"{section} {name}"
        rows.append(f'<tr><td>{escape(shown)}</td>' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return (f'<table id="figures"><thead><tr><th rowspan="2">group</th>{head}</tr><tr>{sub}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _n(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _infra(reports: Sequence[PlannerReport]) -> str:
    lines = []
    for r in reports:
        res = r.results
        text = f"{r.label}: {res.infra_episodes} infra episodes (retried, never scored)"
        if res.unscored:
            text += "; every attempt infra, in no denominator: " + ", ".join(res.unscored)
        if res.task_errors:
            text += "; broken tasks, not scored: " + ", ".join(res.task_errors)
        lines.append(f'<li class="infra">{escape(text)}</li>')
    return f'<ul id="infra">{"".join(lines)}</ul>'


def render_page(bench: str, suite: str, split: str, repeats: int, reports: Sequence[PlannerReport]) -> str:
    """The whole page of a bench."""
    legend = "".join(f'<span><i class="swatch" style="background:{COLOURS[i % len(COLOURS)]}"></i>'
                     f'{escape(r.label)} ({escape(r.planner)}), {r.wall_s:.1f} s wall</span>' for i, r in enumerate(reports))
    categories = [(c, CATEGORY_NAMES[c]) for c in CATEGORIES]
    domains = [(d, d) for d in reports[0].domains]
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>bench {escape(bench)}</title><style>{_CSS}</style></head><body>"
        f"<h1>bench {escape(bench)}</h1>"
        f"<p>suite {escape(suite)}, split {escape(split)}, {repeats} repeat{'' if repeats == 1 else 's'} per task; "
        "success with its 95% Wilson interval over scored tasks; infra failures are retried and never scored.</p>"
        f'<p class="legend">{legend}</p>'
        f"<h2>per category</h2>{_chart('categories', categories, reports, 'categories')}"
        f"<h2>per domain</h2>{_chart('domains', domains, reports, 'domains')}"
        f"<h2>figures</h2>{_table(reports)}<h2>infra</h2>{_infra(reports)}"
        "</body></html>"
    )
