"""A bench's report: per planner, the figures per category, domain and difficulty, as JSON and
as terminal tables (the HTML page is :mod:`planner_runtime.bench.page`).

The JSON shape (``--json``), every rate a fraction and every mean per scored task::

    {"bench": ID, "suite": "builtin" | PATH, "split": "train" | "test" | "all", "repeats": R,
     "planners": {LABEL: {"planner": SPEC, "collection": ID, "wall_s": S,
                          "categories": {"overall" | "tool" | "memory" | "skills" | "subagent": GROUP},
                          "domains": {DOMAIN: GROUP}, "difficulties": {DIFFICULTY: GROUP},
                          "infra": {"episodes": N, "items": [ITEM], "unscored": [ITEM]},
                          "task_errors": [ITEM]}}}
    GROUP = {"n", "successes", "rate", "ci_low", "ci_high", "steps", "prompt_tokens",
             "output_tokens", "usd_per_1k", "seconds"}

``n`` counts scored items only; ``rate`` and the means are ``null`` for an empty group and
``usd_per_1k`` is ``null`` when a planner has no price (PLANNER_AGENT_PRICES). ``infra.episodes``
counts attempts an infra fault ended (each retried); ``infra.unscored`` lists the items whose every
attempt was infra, which count in no denominator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table

from planner_runtime.bench.runner import Results
from planner_runtime.bench.stats import CATEGORIES, GroupStats, by, by_category
from planner_runtime.tasks.spec import TaskSpec

CATEGORY_NAMES = {"overall": "Overall", "tool": "Tool", "memory": "Memory", "skills": "Skills", "subagent": "Sub-agent"}


@dataclass(frozen=True)
class PlannerReport:
    """One planner's figures in a bench."""

    label: str
    planner: str
    collection: str
    wall_s: float
    categories: dict[str, GroupStats]
    domains: dict[str, GroupStats]
    difficulties: dict[str, GroupStats]
    results: Results

    @classmethod
    def of(cls, label: str, planner: str, collection: str, tasks: Sequence[TaskSpec], results: Results,
           wall_s: float) -> PlannerReport:
        """The figures of ``results``; every domain and difficulty of ``tasks`` has a group, empty or not."""
        outcomes = results.outcomes
        return cls(
            label=label, planner=planner, collection=collection, wall_s=wall_s, results=results,
            categories=by_category(outcomes),
            domains=by(outcomes, lambda o: o.domain, sorted({t.domain for t in tasks})),
            difficulties=by(outcomes, lambda o: o.difficulty, _difficulties(tasks)),
        )

    def to_json(self) -> dict[str, Any]:
        r = self.results
        return {
            "planner": self.planner, "collection": self.collection, "wall_s": round(self.wall_s, 3),
            "categories": {k: asdict(v) for k, v in self.categories.items()},
            "domains": {k: asdict(v) for k, v in self.domains.items()},
            "difficulties": {k: asdict(v) for k, v in self.difficulties.items()},
            "infra": {"episodes": r.infra_episodes, "items": list(r.infra_items), "unscored": list(r.unscored)},
            "task_errors": list(r.task_errors),
        }


def _difficulties(tasks: Sequence[TaskSpec]) -> list[str]:
    """The difficulties of ``tasks``, the usual three in their order first."""
    usual = ["easy", "medium", "hard"]
    found = {t.difficulty for t in tasks}
    return [d for d in usual if d in found] + sorted(found - set(usual))


def bench_json(bench: str, suite: str, split: str, repeats: int, reports: Sequence[PlannerReport]) -> dict[str, Any]:
    return {"bench": bench, "suite": suite, "split": split, "repeats": repeats,
            "planners": {r.label: r.to_json() for r in reports}}


def rate_cell(g: GroupStats) -> str:
    """``75% [30–95%] 3/4``; ``–`` for an empty group."""
    if not g.n:
        return "–"
    return f"{100 * (g.rate or 0):.0f}% [{100 * g.ci_low:.0f}–{100 * g.ci_high:.0f}%] {g.successes}/{g.n}"


def _num(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def groups_of(report: PlannerReport) -> list[tuple[str, str, GroupStats]]:
    """(section, name, figures) rows in table order: categories, domains, difficulties."""
    rows = [("category", CATEGORY_NAMES[c], report.categories[c]) for c in CATEGORIES]
    rows += [("domain", d, g) for d, g in report.domains.items()]
    rows += [("difficulty", d, g) for d, g in report.difficulties.items()]
    return rows


def print_tables(console: Console, reports: Sequence[PlannerReport]) -> None:
    """The side-by-side success table, then each planner's detail table and infra line."""
    side = Table(title="success (95% Wilson interval), scored tasks")
    side.add_column("group")
    for r in reports:
        side.add_column(r.label, justify="right")
    for i, (section, name, _) in enumerate(groups_of(reports[0])):
        side.add_row(name if section == "category" else f"{section} {name}", *(rate_cell(groups_of(r)[i][2]) for r in reports))
    console.print(side)
    for r in reports:
        detail = Table(title=f"{r.label} ({r.planner}): collection {r.collection}, {r.wall_s:.1f} s wall")
        for column in ("group", "n", "steps", "prompt tok", "output tok", "$/1k tasks", "s/task"):
            detail.add_column(column, justify="left" if column == "group" else "right")
        for section, name, g in groups_of(r):
            detail.add_row(name if section == "category" else f"{section} {name}", str(g.n), _num(g.steps),
                           _num(g.prompt_tokens, 0), _num(g.output_tokens, 0), _num(g.usd_per_1k, 2), _num(g.seconds, 2))
        console.print(detail)
        res = r.results
        if res.infra_episodes or res.task_errors:
            line = f"{r.label}: {res.infra_episodes} infra episodes retried, not scored"
            if res.unscored:
                line += f"; every attempt infra (in no denominator): {', '.join(res.unscored)}"
            if res.task_errors:
                line += f"; broken tasks (spec verdicts, not scored): {', '.join(res.task_errors)}"
            console.print(line, markup=False, soft_wrap=True)
