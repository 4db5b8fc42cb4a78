"""A small inline-SVG line chart: one or more series over shared x values (training steps), with
the y range's min and max written on the axis, the first and last x under it, and a legend. A
missing or non-finite value breaks its line; a value with no neighbour on either side is drawn as
a dot. No script and no external asset: the SVG sits in the page as text, every name escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_W, _H = 500, 160  # plot area, px: two charts side by side on a laptop screen
_TOP, _BOTTOM, _LEFT, _RIGHT = 10, 24, 64, 12  # margins, px
_INSET = 6  # px between the frame and the data, so a line at its min or max is not hidden by the frame


@dataclass(frozen=True)
class Series:
    """One line: ``values[i]`` belongs to the chart's ``xs[i]``; None where it was not logged."""

    name: str
    values: tuple[float | None, ...]


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def fmt(v: float) -> str:
    """A number short enough for an axis label or a table cell; a whole one (a step, a count) in full."""
    v += 0.0  # -0.0 reads as 0
    return f"{v:.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def _span(values: Sequence[float], fixed: tuple[float, float] | None) -> tuple[float, float]:
    lo, hi = min(values, default=0.0), max(values, default=0.0)
    if fixed is not None:  # a fraction keeps its 0..1 frame, widened only when the data leaves it
        lo, hi = min(lo, fixed[0]), max(hi, fixed[1])
    if lo == hi:  # a flat line sits mid-chart instead of dividing by zero
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    return lo, hi


def _scale(v: float, lo: float, hi: float) -> float:
    """``v``'s place in ``lo..hi`` as 0..1; halved first so that ``hi - lo`` cannot overflow to inf."""
    return (v / 2 - lo / 2) / (hi / 2 - lo / 2)


def line_chart(chart_id: str, title: str, xs: Sequence[float], series: Sequence[Series], *,
               y_range: tuple[float, float] | None = None, x_label: str = "step") -> str:
    """An ``<svg>`` of ``series`` over ``xs`` (ascending), each x written ``"<x_label> <x>"``;
    ``y_range`` is a frame the data may widen."""
    ys = [v for s in series for v in s.values if _finite(v)]
    y_lo, y_hi = _span(ys, y_range)  # type: ignore[arg-type]  # _finite dropped the Nones
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 0.0)

    def point(x: float, y: float) -> tuple[float, float]:
        px = _LEFT + (_W / 2 if x_hi == x_lo else _W * _scale(x, x_lo, x_hi))
        return px, _TOP + _INSET + (_H - 2 * _INSET) * (1 - _scale(y, y_lo, y_hi))  # screen y grows downwards

    width, height = _LEFT + _W + _RIGHT, _TOP + _H + _BOTTOM
    parts = [f'<svg id="{escape(chart_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{_W}" height="{_H}" fill="none" stroke="#ccc"/>',
             f'<text class="y-max" x="{_LEFT - 4}" y="{_TOP + _INSET + 4}" text-anchor="end">{escape(fmt(y_hi))}</text>',
             f'<text class="y-min" x="{_LEFT - 4}" y="{_TOP + _H - _INSET + 4}" text-anchor="end">{escape(fmt(y_lo))}</text>']
    if xs:
        parts.append(f'<text class="x-min" x="{_LEFT}" y="{height - 6}">{escape(x_label)} {escape(fmt(x_lo))}</text>'
                     f'<text class="x-max" x="{_LEFT + _W}" y="{height - 6}" text-anchor="end">{escape(x_label)} {escape(fmt(x_hi))}</text>')
    if y_lo < 0 < y_hi:  # zero is the line that matters for advantages and losses
        zero = point(x_lo, 0.0)[1]
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + _W}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="#ddd"/>')
    for i, s in enumerate(series):
        colour, name = COLOURS[i % len(COLOURS)], escape(s.name)
        run: list[tuple[float, float]] = []
        for x, v in [*zip(xs, s.values), (0.0, None)]:  # the sentinel closes the last run
            if _finite(v):
                run.append(point(x, v))  # type: ignore[arg-type]
                continue
            if len(run) == 1:
                parts.append(f'<circle class="series" data-series="{name}" cx="{run[0][0]:.1f}" cy="{run[0][1]:.1f}" '
                             f'r="2.5" fill="{colour}"><title>{name}</title></circle>')
            elif run:
                points = " ".join(f"{px:.1f},{py:.1f}" for px, py in run)
                parts.append(f'<polyline class="series" data-series="{name}" points="{points}" fill="none" '
                             f'stroke="{colour}" stroke-width="1.5"><title>{name}</title></polyline>')
            run = []
    parts.append("</svg>")
    legend = "".join(
        f'<span><i class="swatch" style="background:{COLOURS[i % len(COLOURS)]}"></i>{escape(s.name)}'
        f'{"" if any(_finite(v) for v in s.values) else " (not logged)"}</span>' for i, s in enumerate(series))
    return f'<figure><figcaption>{escape(title)}</figcaption>{"".join(parts)}<p class="legend">{legend}</p></figure>'
