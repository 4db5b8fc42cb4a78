"""The tool catalogue and the built-in bench's breadth: every tool has a functional domain and a
source, names are unique, and the bench keeps to MobilePA-like proportions (>= 200 tools over 13
domains with >= 8 each; >= 500 task ids from >= 200 templates; every category >= 15% of tasks;
>= 20% of templates held out; a demo for every task; every tool a held-out demo calls is called by a
train demo too)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from planner_runtime.harness.apps import APPS
from planner_runtime.harness.catalogue import GENERAL, catalogue, per_domain
from planner_runtime.harness.toolbox import episode_tool_names
from planner_runtime.harness.tools.simulated.family import DOMAINS
from planner_runtime.tasks.spec import Category, builtin_suite


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=120)


def test_every_tool_an_episode_can_offer_is_in_the_catalogue_once_with_a_domain():
    entries = catalogue()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    assert episode_tool_names() <= set(names)
    assert all(e.domain in DOMAINS or (e.domain == GENERAL and e.source in ("general", "skill")) for e in entries), \
        [e for e in entries if e.domain not in DOMAINS]
    assert all(app.domain in DOMAINS for app in APPS)
    assert {e.source for e in entries} == {"app", "simulated", "general", "skill"}
    assert all(e.sensitive is None or e.source != "general" or e.name == "delegate" for e in entries)


def test_the_catalogue_spans_13_domains_with_at_least_8_tools_each_and_200_tools():
    entries = [e for e in catalogue(composites=False)]
    counts = per_domain(e for e in entries if e.domain != GENERAL)
    assert set(counts) == set(DOMAINS), set(DOMAINS) - set(counts)
    thin = {d: n for d, n in counts.items() if n < 8}
    assert thin == {}
    assert len(entries) >= 200, len(entries)


def test_the_builtin_bench_has_500_tasks_from_200_templates_in_every_category_with_a_held_out_fifth():
    tasks = builtin_suite().tasks
    templates = {t.template: t for t in tasks}
    assert len(tasks) >= 500 and len(templates) >= 200, (len(tasks), len(templates))
    share = Counter(t.category for t in tasks)
    assert all(share[c] / len(tasks) >= 0.15 for c in Category), {c.value: share[c] for c in Category}
    held_out = sum(1 for t in templates.values() if t.split_name == "test")
    assert held_out / len(templates) >= 0.20, (held_out, len(templates))
    assert all(t.demo for t in tasks), [t.id for t in tasks if not t.demo]


def test_every_tool_a_held_out_demo_calls_is_called_by_some_train_demo():
    """The test split measures new tasks, not tools training never showed: a test template whose
    demo calls a tool no train template's demo calls needs a train template for that tool too."""
    called: dict[str, set[str]] = {"train": set(), "test": set()}
    for task in builtin_suite().tasks:
        called[task.split_name] |= {call.name for call in task.demo or ()}
    assert called["test"] and called["test"] - called["train"] == set(), sorted(called["test"] - called["train"])


def test_tools_list_prints_every_tool_and_json_matches_the_catalogue():
    listed = json.loads(cli("tools", "list", "--json").stdout)
    assert [row["name"] for row in listed] == [e.name for e in catalogue()]
    finance = json.loads(cli("tools", "list", "--json", "--domain", "finance", "--source", "app").stdout)
    assert finance and {(r["domain"], r["source"]) for r in finance} == {("finance", "app")}
    text = cli("tools", "list", "--source", "simulated")
    assert text.returncode == 0 and "weather_now" in text.stdout and "send_message" not in text.stdout
    assert "tools in" in text.stderr


@pytest.mark.parametrize("args", [("--source", "bogus"), ("--domain", "astrology")])
def test_tools_list_refuses_an_unknown_filter_in_one_line(args):
    proc = cli("tools", "list", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "error:" in proc.stderr
