"""Two more kinds of generated task besides compositions (:mod:`planner_runtime.runs.generate`),
each aimed at a collection's weakest domains and categories first:

- **recombinations** (new parameter spaces): a template's listed instances (its params and
  variants) give each parameter a set of values; an instance with one parameter's value taken
  from another instance is a new point of that space (a text to a number it was never sent to, a
  room with another device). Many such points do not hold together (a city with another city's
  temperature where the world seeds one of them): the gates (the audit and the demo, which must
  pass its own verifier) keep only those that do;
- **tight variants** (harder): an instance with a ``max_steps_used`` check of the demo's own
  length, so an episode that wastes a call fails. The step limit stays as it was: a limit equal
  to the demo's length would only cut a wasteful episode short, and a state check can pass an
  episode cut before its final answer. The demo shows it can be done.

A generated task keeps its template's split: a held-out template's new instances stay held out.
Templates with random parameters are left out of recombination: `collect --first-seed` already
draws fresh points of their space.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable, Iterator, Sequence

from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.tasks.spec import Suite, TaskSpec

_ID_UNSAFE = re.compile(r"[^a-z0-9_.\-]+")
PER_TEMPLATE = 2  # at most this many of a kind from one template, so no template takes every slot


def weakest_first(tasks: Iterable[TaskSpec], domains: Sequence[str], categories: Sequence[str]) -> list[TaskSpec]:
    """``tasks`` ordered by the gaps: failing domains first (in their order), then failing
    categories, then by template id."""
    return sorted(tasks, key=lambda t: (
        domains.index(t.domain) if t.domain in domains else len(domains),
        categories.index(t.category.value) if t.category.value in categories else len(categories),
        t.template, t.id))


def _fixed(task: TaskSpec, params: dict[str, Any]) -> dict[str, Any]:
    data = task.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data["params"] = params
    data.pop("random", None)
    data.pop("variants", None)
    return data


def _new_id(*parts: str) -> str:
    return _ID_UNSAFE.sub("-", ".".join(("gen", *parts)).lower())[:120]


def _listed(suite: Suite) -> dict[str, list[TaskSpec]]:
    """Each template's listed instances (the task and its variants), in the suite's order."""
    found: dict[str, list[TaskSpec]] = defaultdict(list)
    for task in suite.tasks:
        found[task.template].append(task)
    return found


def _swaps(listed: Sequence[TaskSpec]) -> Iterator[dict[str, Any]]:
    """Parameter sets one value away from a listed instance, taken from another instance, that
    no listed instance has; in a fixed order."""
    seen = {tuple(sorted((k, repr(v)) for k, v in t.values.items())) for t in listed}
    names = sorted(set.intersection(*(set(t.values) for t in listed)))
    for a in listed:
        for name in names:
            for b in listed:
                if b is a or b.values[name] == a.values[name]:
                    continue
                params = {**a.values, name: b.values[name]}
                key = tuple(sorted((k, repr(v)) for k, v in params.items()))
                if key not in seen:
                    seen.add(key)
                    yield params


def recombinations(suite: Suite, domains: Sequence[str], categories: Sequence[str], limit: int) -> list[TaskSpec]:
    """Up to ``limit`` new instances of listed templates (see the module's docstring), at most
    :data:`PER_TEMPLATE` a template, weakest templates first and round-robin over them."""
    listed = _listed(suite)
    firsts = [t for t in weakest_first((ts[0] for ts in listed.values()), domains, categories)
              if len(listed[t.template]) >= 2 and not t.random]
    made: list[TaskSpec] = []
    for first in firsts:
        instances = listed[first.template]
        taken = 0
        for params in _swaps(instances):
            if len(made) >= limit or taken >= PER_TEMPLATE:
                break
            data = _fixed(first, params)
            data.update(id=_new_id(first.template, f"p{taken + 1}"), source="generated", split=first.split_name)
            try:
                made.append(TaskSpec.model_validate(data))
            except (ValueError, PlannerRuntimeError):
                continue
            taken += 1
    return made


def tight(task: TaskSpec) -> TaskSpec:
    """``task`` with no spare step: a ``max_steps_used`` check of its demo's length.
    Raises ValueError for a task without a demo or one that already limits its steps."""
    if not task.demo:
        raise ValueError(f"{task.id} has no demo to size the limit from")
    if any(c.max_steps_used is not None for c in task.checks):
        raise ValueError(f"{task.id} already limits its steps")
    n = len(task.demo)
    data = _fixed(task, dict(task.values))
    data.update(id=_new_id(task.id.replace("@", "-"), "tight"), source="generated", difficulty="hard",
                split=task.split_name, checks=[*data["checks"], {"max_steps_used": n}])
    return TaskSpec.model_validate(data)


def tight_variants(suite: Suite, domains: Sequence[str], categories: Sequence[str], limit: int) -> list[TaskSpec]:
    """Up to ``limit`` tight variants (:func:`tight`) of the weakest templates, one a template
    (its listed instance), whose demo leaves room to waste a step today."""
    made: list[TaskSpec] = []
    for task in weakest_first((ts[0].draw(0) for ts in _listed(suite).values()), domains, categories):
        if len(made) >= limit:
            break
        if task.demo and task.max_steps > len(task.demo):
            try:
                made.append(tight(task))
            except (ValueError, PlannerRuntimeError):
                continue  # it already limits its steps, or the copy does not build
    return made
