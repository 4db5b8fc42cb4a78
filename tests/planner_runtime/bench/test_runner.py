"""A bench's outcomes read back from a real store after a collection on virtual phones: an item
retried after an infra fault is scored once, an item whose every attempt was infra is scored
for no one, and the tokens and dollars include a sub-agent's episodes."""

from __future__ import annotations

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.bench.report import PlannerReport
from planner_runtime.bench.runner import Contender, results, run_contender
from planner_runtime.planners import PlannerUnavailable
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import builtin_suite

FINISH = {"name": "finish", "arguments": {"answer": "ok"}}
SCRIPTS = {
    "clock.set_alarm": [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, FINISH],
    "contacts.add_contact": [{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}, FINISH],
    "settings.wifi_off": [FINISH],  # ends without doing it: a failure scored against the planner
}
TASKS = [t for t in builtin_suite().tasks if t.id in SCRIPTS]
PRICES = {"scripted": {"input": 2.0, "output": 8.0}}


class EndpointDown(ScriptedPlanner):
    def plan(self, messages, tools, *, sampling=None):
        raise PlannerUnavailable("http://127.0.0.1:1/v1 is unreachable")


@pytest.fixture
def pool(tmp_path):
    with DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as p:
        yield p


def test_infra_attempts_are_counted_apart_and_never_scored(pool, store):
    attempts: dict[str, int] = {}

    def planner_for(task):
        attempts[task.id] = attempts.get(task.id, 0) + 1
        if task.id == "contacts.add_contact" or (task.id == "clock.set_alarm" and attempts[task.id] == 1):
            return EndpointDown()  # add_contact: every attempt; set_alarm: the first only
        return ScriptedPlanner(SCRIPTS[task.id])

    contender = Contender(label="s", planner="scripted", collection="bench_x.0", planner_for=planner_for)
    progress, wall = run_contender(TASKS, contender, pool=pool, store=store, workers=2, repeat=1)
    assert progress.gave_up == ["contacts.add_contact#0"] and wall > 0
    got = results(store, "bench_x.0", TASKS, PRICES)
    assert got.infra_episodes == 1 + 3 and got.infra_items == ("clock.set_alarm#0", "contacts.add_contact#0")
    assert got.unscored == ("contacts.add_contact#0",)
    assert sorted((o.item, o.success) for o in got.outcomes) == [("clock.set_alarm#0", True), ("settings.wifi_off#0", False)]

    report = PlannerReport.of("s", "scripted", "bench_x.0", TASKS, got, wall)
    assert (report.categories["overall"].n, report.categories["overall"].successes) == (2, 1)
    assert report.domains["contacts"].n == 0 and report.domains["contacts"].rate is None  # in no denominator
    shown = report.to_json()["infra"]
    assert shown == {"episodes": 4, "items": ["clock.set_alarm#0", "contacts.add_contact#0"], "unscored": ["contacts.add_contact#0"]}


def test_a_sub_agents_tokens_count_in_its_task(pool, store):
    task = next(t for t in builtin_suite().tasks if t.id == "subagent.save_number_as_new_contact")
    delegate = [{"name": "delegate", "arguments": {"goal": "Look up Grace Hopper's phone number"}},
                {"name": "add_contact", "arguments": {"name": "Admiral Hopper", "phone": "+1 555 0199"}}, FINISH]
    contender = Contender(label="s", planner="scripted", collection="bench_y.0",
                          planner_for=lambda t: ScriptedPlanner(delegate))
    run_contender([task], contender, pool=pool, store=store, workers=1, repeat=1)
    (outcome,) = results(store, "bench_y.0", [task], PRICES).outcomes
    root = next(store.get(i) for i in store.ids(collection="bench_y.0"))
    children = store.descendants(root.id)
    assert children, "the episode delegated nothing"
    total = store.usage(root.id).total
    assert (outcome.prompt_tokens, outcome.output_tokens) == (total.prompt_tokens, total.completion_tokens)
    assert total.prompt_tokens > root.usage.prompt_tokens  # the sub-agent's share is in
    assert outcome.dollars == pytest.approx((2.0 * total.prompt_tokens + 8.0 * total.completion_tokens) / 1e6)
    assert outcome.category == "subagent" and outcome.steps == len(root.steps)
