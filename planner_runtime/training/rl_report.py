"""An RL run's step log drawn as one self-contained HTML page: a summary table, inline-SVG line
charts of every logged figure over steps, and the controller's changes to the settings. The page
has no script and loads nothing (its Content-Security-Policy forbids both), and every string from
the log (algo, times, regimes, the controller's keys and reasons) is escaped: the log is read as
hostile (:mod:`.rl_log`).
"""

from __future__ import annotations

import os
from html import escape
from operator import attrgetter
from pathlib import Path
from statistics import fmean
from typing import Sequence

from planner_runtime.training import TrainingError
from planner_runtime.training.rl_log import STEPS, StepLog, StepRecord, read_steps
from planner_runtime.training.svg_chart import Series, fmt, line_chart
from planner_runtime.viewer.style import CSP

# the log's reader and records are re-exported, so a caller of the report needs one import
__all__ = ["REPORT", "STEPS", "StepLog", "StepRecord", "read_steps", "render", "write_report"]
REPORT = "report.html"

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 1em 2em; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 0.2em; }
.legend { margin: 0.2em 0 0; } .legend span { display: inline-block; margin-right: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: middle; }
.meta { color: #57606a; } svg text { font-size: 11px; fill: #444; }
"""


def _n(value: float | None) -> str:
    return "–" if value is None else fmt(value)


def _count(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f} s ({value / 3600:,.2f} h)"


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return fmean(known) if known else None


def _total(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _summary(log: StepLog) -> str:
    steps = log.steps
    rates = [(r.step, r.success_rate) for r in steps if r.success_rate is not None]
    best = max(rates, key=lambda p: p[1], default=None)
    quarter = max(1, len(steps) // 4)  # at least one: a short run compares its first step with its last
    tokens = [r.output_tokens_per_episode for r in steps]
    times = [r.time for r in steps if r.time]
    rows = [
        ("steps", f"{len(steps)} (step {steps[0].step} to {steps[-1].step})"),
        ("algo", ", ".join(sorted({r.algo for r in steps if r.algo})) or "–"),
        ("logged", f"{times[0]} to {times[-1]}" if times else "–"),
        ("first success rate", _n(rates[0][1]) if rates else "–"),
        ("last success rate", _n(rates[-1][1]) if rates else "–"),
        ("best success rate", f"{fmt(best[1])} at step {best[0]}" if best else "–"),
        ("output tokens per episode, first quarter of steps", _n(_mean(tokens[:quarter]))),
        ("output tokens per episode, last quarter of steps", _n(_mean(tokens[-quarter:]))),
        ("rollout time", _seconds(_total([r.rollout_seconds for r in steps]))),
        ("update time", _seconds(_total([r.update_seconds for r in steps]))),
        ("episodes", _count(_total([r.episodes for r in steps]))),
        ("infra episodes", _count(_total([r.infra_episodes for r in steps]))),
        ("skipped groups", _count(_total([r.skipped_groups for r in steps]))),
        ("skipped lines", str(log.skipped)),
    ]
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table id="summary">{body}</table>'


def _charts(steps: Sequence[StepRecord]) -> str:
    xs = [float(r.step) for r in steps]

    def s(name: str, field: str) -> Series:
        get = attrgetter(field)
        return Series(name, tuple(get(r) for r in steps))

    regimes = sorted({g.regime for r in steps for g in r.groups}, key=lambda x: (x is not None, x or ""))
    per_regime = [Series("no regime" if regime is None else regime,
                         tuple(float(sum(g.regime == regime for g in r.groups)) for r in steps)) for regime in regimes]
    specs: list[tuple[str, str, list[Series], tuple[float, float] | None]] = [
        ("success-rate", "success rate", [s("success rate", "success_rate")], (0.0, 1.0)),
        ("reward", "reward: mean and components", [s("mean", "reward.mean"), s("success", "reward.success"),
                                                   s("progress", "reward.progress"), s("cost", "reward.cost")], None),
        ("advantage", "advantage: std, abs mean, min, max", [
            s("std", "advantage.std"), s("abs mean", "advantage.abs_mean"),
            s("min", "advantage.min"), s("max", "advantage.max")], None),
        ("kl-clip", "KL and clip fraction", [s("KL", "kl"), s("clip fraction", "clip_fraction")], None),
        ("loss", "loss", [s("loss", "loss")], None),
        ("output-tokens", "output tokens per episode", [s("output tokens", "output_tokens_per_episode")], None),
        ("steps-per-episode", "steps per episode", [s("steps", "steps_per_episode")], None),
        ("seconds", "rollout and update seconds", [s("rollout", "rollout_seconds"), s("update", "update_seconds")], None),
        ("regimes", "groups per regime", per_regime, None),
        ("settings", "settings", [s("low", "settings.low"), s("high", "settings.high"),
                                  s("progress weight", "settings.progress_weight"),
                                  s("cost weight", "settings.cost_weight")], None),
    ]
    out = []
    for chart_id, title, series, frame in specs:
        if any(v is not None for one in series for v in one.values):
            out.append(line_chart(f"chart-{chart_id}", title, xs, series, y_range=frame))
        else:  # the caption stays, so a figure never logged (KL under GRPO) reads as such, not as missing
            out.append(f'<figure id="chart-{chart_id}"><figcaption>{escape(title)}</figcaption>'
                       '<p class="meta">not logged in this run</p></figure>')
    return f'<div class="charts">{"".join(out)}</div>'


def _controller(steps: Sequence[StepRecord]) -> str:
    rows = "".join(
        f"<tr><td>{r.step}</td><td>{escape(c.key or '–')}</td><td>{escape(_n(c.old))} → {escape(_n(c.new))}</td>"
        f"<td>{escape(c.reason or '')}</td></tr>" for r in steps for c in r.controller)
    if not rows:
        return '<p class="meta">The controller changed no setting.</p>'
    return f'<table id="controller"><tr><th>step</th><th>key</th><th>change</th><th>reason</th></tr>{rows}</table>'


def render(log: StepLog, *, title: str) -> str:
    """The whole page of ``log``; a log with no good line yet says so."""
    head = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><h1>{escape(title)}</h1>")
    if not log.steps:
        skipped = f" ({log.skipped} unreadable line{'' if log.skipped == 1 else 's'} skipped)" if log.skipped else ""
        return head + f'<p id="empty">No steps yet{escape(skipped)}.</p></body></html>'
    return (head + f"<h2>summary</h2>{_summary(log)}<h2>charts</h2>{_charts(log.steps)}"
            f"<h2>controller changes</h2>{_controller(log.steps)}</body></html>")


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Render ``run_dir/steps.jsonl`` to ``out`` (default ``run_dir/report.html``); returns where.

    The page is written beside its final name and renamed over it, so a browser left open on the
    report of a running job reloads either the old page or the new one, never half of one."""
    log = read_steps(run_dir / STEPS)
    out = out if out is not None else run_dir / REPORT
    page = render(log, title=f"RL run {run_dir.resolve().name}")
    tmp = out.with_name(f"{out.name}.part-{os.getpid()}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(out)
    except OSError as exc:
        raise TrainingError(f"cannot write the RL report {out}: {exc.strerror or type(exc).__name__}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out
