"""Seeded instances of the built-in templates: most templates draw their parameters per seed, so
training data made on fresh seeds has variety and a planner measured on other seeds meets tasks
it has not seen; seed 0 of every template is the task the suite lists."""

from __future__ import annotations

from collections import Counter

from planner_runtime.tasks.spec import builtin_suite, find_task

SUITE = builtin_suite()
RANDOM = [t for t in SUITE.tasks if t.random]


def _instance(task) -> tuple[str, str]:
    return task.rendered_goal(), repr(sorted(task.params.items()))


def _calls(task) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in task.rendered_demo()]


def test_most_builtin_tasks_vary_from_seed_to_seed_in_both_splits():
    varied = {t.template for t in SUITE.tasks if t.random or "@" in t.id}  # random or listed variants
    listed = [t for t in SUITE.tasks if t.template in varied]
    assert len(RANDOM) >= 36 and len(listed) >= 70, (len(RANDOM), len(listed))
    splits = Counter(t.split_name for t in RANDOM)
    assert splits["train"] >= 25 and splits["test"] >= 5, splits
    assert {t.category.value for t in RANDOM} == {"tool", "memory", "skills", "subagent"}


def test_each_random_template_gives_fresh_instances_and_keeps_its_listed_one_at_seed_0():
    for task in RANDOM:
        listed = task.draw(0)
        assert (listed.id, listed.params, listed.rendered_goal()) == (task.id, task.params, task.rendered_goal()), task.id
        assert _calls(listed) == _calls(task), task.id
        fresh = [task.draw(seed) for seed in (1, 2, 3)]
        assert len({_instance(t) for t in fresh}) >= 2, task.id
        assert [find_task(f"{task.id}@{seed}", SUITE).params for seed in (1, 2, 3)] == [t.params for t in fresh]
