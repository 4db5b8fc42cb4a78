"""The RL report: a step log written as the trainer writes it becomes one page whose charts,
summary and controller table show the log's figures; bad lines are skipped and counted; strings
from the log stay text. Pages are read back through ``html.parser`` into a small tree."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from planner_runtime.training import TrainingError
from planner_runtime.training.rl_report import read_steps, render, write_report

HOSTILE = "<script>alert(1)</script>"
CHART_TITLES = [
    "success rate", "reward: mean and components", "advantage: std, abs mean, min, max", "KL and clip fraction",
    "loss", "output tokens per episode", "steps per episode", "rollout and update seconds", "groups per regime",
    "settings",
]
_VOID = {"meta", "br", "img", "hr", "input", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str, **attrs: str) -> list[Node]:
        found = [self] if self.tag == tag and all(self.attrs.get(k.rstrip("_")) == v for k, v in attrs.items()) else []
        for c in self.children:
            if isinstance(c, Node):
                found += c.all(tag, **attrs)
        return found

    def one(self, tag: str, **attrs: str) -> Node:
        found = self.all(tag, **attrs)
        assert len(found) == 1, (tag, attrs, len(found))
        return found[0]


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("#document", {})
        self._open = [self.root]

    def handle_starttag(self, tag, attrs):  # noqa: ANN001 - HTMLParser's signature
        node = Node(tag, dict(attrs))
        self._open[-1].children.append(node)
        if tag not in _VOID:
            self._open.append(node)

    def handle_startendtag(self, tag, attrs):  # noqa: ANN001
        self._open[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag):  # noqa: ANN001
        assert self._open[-1].tag == tag, f"</{tag}> closes <{self._open[-1].tag}>"
        self._open.pop()

    def handle_data(self, data):  # noqa: ANN001
        self._open[-1].children.append(data)


def parse(page: str) -> Node:
    tree = _Tree()
    tree.feed(page)
    tree.close()
    assert tree._open == [tree.root], "unclosed elements"
    return tree.root


def summary(doc: Node) -> dict[str, str]:
    return {row.one("th").text(): row.one("td").text() for row in doc.one("table", id="summary").all("tr")}


def points(polyline: Node) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in (polyline.attrs["points"] or "").split()]  # type: ignore[misc]


def step(n: int, **over: Any) -> dict[str, Any]:
    """A line as the trainer writes it, with ``over`` replacing fields."""
    line = {
        "step": n, "time": f"2026-12-02T05:{n:02d}:00+00:00", "algo": "care", "success_rate": 0.25 * n,
        "groups": [{"task": "clock.set_alarm@seed3", "regime": "progress", "success_rate": 0.25,
                    "rewards": [1.2, 0.1, 0.0, 0.3], "advantages": [1.5, -0.5, -0.6, -0.4]},
                   {"task": "clock.alarm_off@seed1", "regime": "success" if n > 2 else "progress", "success_rate": 0.5,
                    "rewards": [1, 0, 1, 0], "advantages": [1, -1, 1, -1]}],
        "reward": {"mean": 0.4, "success": 0.5, "progress": 0.6, "cost": 0.3},
        "advantage": {"mean": 0.0, "std": 0.9, "min": -1.2, "max": 1.5, "abs_mean": 0.7},
        "kl": 0.01 * n, "clip_fraction": 0.1, "loss": 0.01,
        "output_tokens_per_episode": 60.0 - 5 * n, "steps_per_episode": 2.5,
        "rollout_seconds": 100.0, "update_seconds": 80.0,
        "episodes": 8, "infra_episodes": 1, "skipped_groups": 0,
        "settings": {"low": 0.25, "high": 0.75, "progress_weight": 0.5, "cost_weight": 0.2},
        "controller": [],
    }
    return {**line, **over}


def write_log(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def test_page_shows_every_chart_the_summary_and_each_controller_change(tmp_path):
    change = {"key": "cost_weight", "old": 0.2, "new": 0.3, "reason": "output tokens rose two steps running"}
    lines = [step(1), step(2, controller=[change]), step(3),
             step(4, controller=[{"key": "low", "old": 0.25, "new": 0.3, "reason": "too few groups in range"}])]
    doc = parse(render(read_steps(write_log(tmp_path / "steps.jsonl", lines)), title="RL run r1"))

    assert [f.one("figcaption").text() for f in doc.all("figure")] == CHART_TITLES
    assert len(doc.all("svg")) == len(CHART_TITLES)  # every figure here was logged
    figures = summary(doc)
    assert figures["steps"] == "4 (step 1 to 4)"
    assert figures["algo"] == "care"
    assert (figures["first success rate"], figures["last success rate"]) == ("0.25", "1")
    assert figures["best success rate"] == "1 at step 4"
    # a quarter of four steps is one: the first step's 55 tokens, the last's 40
    assert figures["output tokens per episode, first quarter of steps"] == "55"
    assert figures["output tokens per episode, last quarter of steps"] == "40"
    assert figures["rollout time"].startswith("400.0 s") and figures["update time"].startswith("320.0 s")
    assert (figures["infra episodes"], figures["skipped groups"], figures["skipped lines"]) == ("4", "0", "0")
    rows = [[td.text() for td in tr.all("td")] for tr in doc.one("table", id="controller").all("tr")[1:]]
    assert rows == [["2", "cost_weight", "0.2 → 0.3", "output tokens rose two steps running"],
                    ["4", "low", "0.25 → 0.3", "too few groups in range"]]
    regimes = doc.one("svg", id="chart-regimes")
    assert sorted(p.attrs["data-series"] for p in regimes.all("polyline")) == ["progress", "success"]


def test_strings_from_the_log_stay_text(tmp_path):
    """A title, algo, time, regime, key and reason that are markup show as their characters; no
    tag, attribute or script comes from them (nor from a task name, which the page does not show)."""
    evil_attr = '"><svg onload="alert(2)">'
    lines = [step(1, algo=HOSTILE, time=HOSTILE,
                  groups=[{"task": HOSTILE, "regime": evil_attr, "rewards": [], "advantages": []}],
                  controller=[{"key": HOSTILE, "old": 0.1, "new": 0.2, "reason": HOSTILE}]),
             step(2, groups=[{"task": HOSTILE, "regime": evil_attr}])]
    page = render(read_steps(write_log(tmp_path / "steps.jsonl", lines)), title=HOSTILE)
    doc = parse(page)

    assert "<script" not in page and not doc.all("script")
    assert not [n for n in doc.all("svg") if n.attrs.get("onload")]
    assert doc.one("head").one("title").text() == doc.one("h1").text() == HOSTILE
    assert summary(doc)["algo"] == f"{HOSTILE}, care" and summary(doc)["logged"] == f"{HOSTILE} to 2026-12-02T05:02:00+00:00"
    assert [td.text() for td in doc.one("table", id="controller").all("td")][-1] == HOSTILE
    # the regime is a series name: escaped inside the attribute, whole again once parsed
    assert [p.attrs["data-series"] for p in doc.one("svg", id="chart-regimes").all("polyline")] == [evil_attr]


def test_bad_lines_are_skipped_and_counted_and_the_rest_drawn(tmp_path):
    truncated = json.dumps(step(5))[:40]
    lines = [step(1), "not json at all", [1, 2, 3], step(2), step(3, success_rate="high"), "[" * 100_000, step(4),
             truncated]
    path = write_log(tmp_path / "steps.jsonl", lines)
    path.write_text(path.read_text(encoding="utf-8").removesuffix("\n"), encoding="utf-8")  # killed mid-line
    log = read_steps(path)

    assert [r.step for r in log.steps] == [1, 2, 4]
    assert log.skipped == 5
    doc = parse(render(log, title="r"))
    assert summary(doc)["skipped lines"] == "5"
    assert summary(doc)["last success rate"] == "1"
    assert len(points(doc.one("svg", id="chart-success-rate").one("polyline"))) == 3


@pytest.mark.parametrize("bad", [
    {"success_rate": True}, {"step": "3"}, {"step": None}, {"groups": {"task": "x"}}, {"groups": ["x"]},
    {"reward": [0.1]}, {"episodes": 2.5}, {"controller": [{"reason": 7}]}, {"step": 10**400},
])
def test_a_field_of_the_wrong_type_skips_its_line(tmp_path, bad):
    log = read_steps(write_log(tmp_path / "steps.jsonl", [step(1), step(2, **bad)]))
    assert ([r.step for r in log.steps], log.skipped) == ([1], 1)


def test_missing_fields_read_as_not_logged_and_a_later_line_for_a_step_wins(tmp_path):
    """A line with only its step is a step; NaN is not a value; a resumed run's second step 2 replaces the first."""
    lines = [step(1), {"step": 2}, '{"step": 3, "kl": NaN, "success_rate": 0.5, "algo": "a\u2028b"}',
             step(2, success_rate=0.9)]
    log = read_steps(write_log(tmp_path / "steps.jsonl", lines))
    assert [(r.step, r.success_rate) for r in log.steps] == [(1, 0.25), (2, 0.9), (3, 0.5)]
    assert log.steps[2].kl is None and log.steps[2].reward.mean is None and log.steps[2].groups == ()
    assert log.steps[2].algo == "a\u2028b"  # a line separator inside a string does not cut its line
    parse(render(log, title="r"))


def test_an_empty_log_says_there_are_no_steps_yet(tmp_path):
    log = read_steps(write_log(tmp_path / "steps.jsonl", []))
    assert (log.steps, log.skipped) == ((), 0)
    doc = parse(render(log, title="r"))
    assert doc.one("p", id="empty").text() == "No steps yet."
    assert not doc.all("svg")


def test_a_missing_log_raises_naming_the_file(tmp_path):
    with pytest.raises(TrainingError, match="no step log at .*steps.jsonl") as caught:
        write_report(tmp_path)
    assert str(tmp_path / "steps.jsonl") in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "report.html").exists()


def test_the_success_line_moves_with_the_data_and_breaks_where_a_value_is_missing(tmp_path):
    rates = [0.1, 0.3, None, 0.2, 0.6, 0.9]
    log = read_steps(write_log(tmp_path / "steps.jsonl", [step(i + 1, success_rate=r) for i, r in enumerate(rates)]))
    chart = parse(render(log, title="r")).one("svg", id="chart-success-rate")

    first, second = (points(p) for p in chart.all("polyline"))
    assert len(first) == 2 and len(second) == 3
    xs = [x for x, _ in first + second]
    assert xs == sorted(xs) and len(set(xs)) == 5
    assert first[1][1] < first[0][1]  # 0.1 → 0.3 rises: screen y falls
    assert second[0][1] > first[1][1]  # 0.3 → 0.2 falls: screen y grows
    assert second[2][1] < second[1][1] < second[0][1]
    assert (chart.one("text", class_="y-min").text(), chart.one("text", class_="y-max").text()) == ("0", "1")


def test_a_grpo_run_with_no_regimes_and_no_kl_renders(tmp_path):
    lines = [step(n, algo="grpo", kl=None, settings=None,
                  groups=[{"task": "clock.set_alarm@seed0", "regime": None, "success_rate": 0.5}] * 2)
             for n in (1, 2, 3)]
    doc = parse(render(read_steps(write_log(tmp_path / "steps.jsonl", lines)), title="grpo"))

    regimes = doc.one("svg", id="chart-regimes").one("polyline")
    assert regimes.attrs["data-series"] == "no regime"
    assert {y for _, y in points(regimes)} == {points(regimes)[0][1]}  # two groups every step: a flat line
    assert doc.one("figure", id="chart-settings").one("p").text() == "not logged in this run"
    kl = doc.one("svg", id="chart-kl-clip")
    assert [p.attrs["data-series"] for p in kl.all("polyline")] == ["clip fraction"]
    assert "KL (not logged)" in doc.all("figure")[3].one("p", class_="legend").text()


def test_write_report_replaces_the_page_whole(tmp_path):
    run = tmp_path / "run"
    write_log(run / "steps.jsonl", [step(1)])
    (run / "report.html").write_text("old", encoding="utf-8")

    assert write_report(run) == run / "report.html"
    assert summary(parse((run / "report.html").read_text(encoding="utf-8")))["steps"] == "1 (step 1 to 1)"
    out = tmp_path / "elsewhere" / "r.html"
    assert write_report(run, out) == out and out.is_file()
    assert sorted(p.name for p in run.iterdir()) == ["report.html", "steps.jsonl"]  # nothing left beside it
