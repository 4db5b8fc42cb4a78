"""Failure analysis of one collection: where its verified failures cluster, and how often each
category and domain succeeds.

Every top-level episode of the collection with a verdict is an **attempt** (a sub-agent's episode
counts through its parent's). Episodes an infrastructure fault ended or spoiled are never the
planner's doing: they are left out and counted apart (``infra``), as are episodes without a
verdict or whose task itself was found broken (``unscored``). Each attempt falls into slices
along six dimensions:

- ``error``: the code of the first error feedback (``no_error`` when none came);
- ``demo_step``: the first call that differs from the task's demo (its reference solution,
  rendered with the episode's parameters): another tool, other arguments (their names), or the
  episode ending before that call; ``matches_demo`` when none differs. Tasks without a demo, or
  unknown to the suite, have no slice here;
- ``tool`` and ``app``: every tool called (``finish`` aside), and the phone app or simulated
  service family each works through (:mod:`planner_runtime.harness.catalogue`);
- ``category`` and ``domain``: the task's.

A **cluster** is a slice with failures: its key, how many failed, its failure rate against the
attempts in that same slice, and a few example trajectory ids (sorted, so two runs agree).
:func:`failure_gaps` gives the view ``tasks generate`` aims its new tasks with.
"""

from __future__ import annotations

import functools
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner_runtime.coevolve import CoevolveError
from planner_runtime.contract import ErrorCode, FailureKind, ToolCall, Trajectory, TrajectoryStatus
from planner_runtime.errors import ConfigError, PlannerRuntimeError, TaskSpecError
from planner_runtime.tasks.spec import Suite, TaskSpec, builtin_suite, find_task, load_suite
from planner_runtime.trajectories.store import TrajectoryStore

if TYPE_CHECKING:
    from planner_runtime.runs.generate import Gaps

DIMENSIONS = ("error", "demo_step", "tool", "app", "category", "domain")
NO_ERROR = "no_error"
MATCHES_DEMO = "matches_demo"
EXAMPLES = 3  # example trajectory ids kept per cluster


@dataclass(frozen=True)
class DemoDiff:
    """The first call of an episode that differs from its task's demo."""

    step: int  # 1-based, counting the episode's calls
    kind: str  # tool | arguments | missing (the episode ended first) | extra (it went on past the demo)
    expected: ToolCall | None
    actual: ToolCall | None
    arguments: tuple[str, ...] = ()  # for kind "arguments": the names whose values differ

    def key(self, template: str) -> str:
        want = self.expected.name if self.expected else ""
        if self.kind == "tool":
            return f"{template} step {self.step}: called {self.actual.name if self.actual else '?'} instead of {want}"
        if self.kind == "arguments":
            return f"{template} step {self.step}: {want} with other {', '.join(self.arguments)}"
        if self.kind == "missing":
            return f"{template} step {self.step}: ended before {want}"
        return f"{template} step {self.step}: {self.actual.name if self.actual else '?'} after the demo's last call"


@dataclass(frozen=True)
class Attempt:
    """One scored episode, as the analysis reads it."""

    trajectory_id: str
    task_id: str | None
    success: bool
    status: TrajectoryStatus
    category: str | None
    domain: str | None
    error: str  # the first error code, or NO_ERROR
    error_call: ToolCall | None  # the call that got the first error
    error_hint: str
    demo: DemoDiff | None
    demo_key: str | None  # its key in the demo_step dimension; None: no demo to compare with
    tools: tuple[str, ...]  # called, sorted, finish aside
    apps: tuple[str, ...]
    finished: bool  # the planner called finish
    repeated: bool  # it repeated a call (a repeated_action error, or one call twice in a row)

    def keys(self, dimension: str) -> tuple[str, ...]:
        return {"error": (self.error,), "demo_step": (self.demo_key,) if self.demo_key else (),
                "tool": self.tools, "app": self.apps, "category": (self.category,) if self.category else (),
                "domain": (self.domain,) if self.domain else ()}[dimension]


@dataclass(frozen=True)
class Slice:
    """The attempts sharing one value of one dimension; a cluster when some of them failed."""

    dimension: str
    key: str
    failures: int
    attempts: int
    examples: tuple[str, ...]  # failing trajectory ids, sorted, at most EXAMPLES

    @property
    def rate(self) -> float:
        """The failure rate in this slice."""
        return self.failures / self.attempts if self.attempts else 0.0

    @property
    def success_rate(self) -> float:
        return 1.0 - self.rate if self.attempts else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "key": self.key, "count": self.failures, "attempts": self.attempts,
                "rate": round(self.rate, 3), "examples": list(self.examples)}


@dataclass(frozen=True)
class Analysis:
    collection: str
    attempts: int
    failures: int
    infra: int  # episodes an infra fault ended or spoiled: never the planner's
    unscored: int  # no verdict, or the task itself was found broken
    slices: tuple[Slice, ...]
    failed: tuple[Attempt, ...]  # the failing attempts, by trajectory id

    def clusters(self, dimension: str | None = None) -> list[Slice]:
        """Failing slices (of ``dimension``, or all), most failures first, then highest rate."""
        found = [s for s in self.slices if s.failures and (dimension is None or s.dimension == dimension)]
        return sorted(found, key=lambda s: (-s.failures, -s.rate, DIMENSIONS.index(s.dimension), s.key))

    def rates(self, dimension: str) -> list[Slice]:
        """Every slice of ``dimension`` (``category`` or ``domain``), lowest success rate first."""
        return sorted((s for s in self.slices if s.dimension == dimension), key=lambda s: (s.success_rate, -s.attempts, s.key))

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "attempts": self.attempts, "failures": self.failures,
                "infra": self.infra, "unscored": self.unscored,
                "success_rates": {d: [{"key": s.key, "attempts": s.attempts, "successes": s.attempts - s.failures,
                                       "rate": round(s.success_rate, 3)} for s in self.rates(d)] for d in ("category", "domain")},
                "clusters": {d: [s.to_json() for s in self.clusters(d)] for d in DIMENSIONS}}


@functools.cache
def tool_apps() -> dict[str, str]:
    """Tool name → the phone app or simulated family it works through (general tools: none)."""
    from planner_runtime.harness.catalogue import catalogue

    return {e.name: e.app for e in catalogue() if e.app}


def collection_suite(store: TrajectoryStore, collection: str) -> Suite:
    """The suite ``collection`` ran, as its recorded spec names it (its file's content when it
    started, if kept; the built-in suite when it names none)."""
    spec = store.collection_spec(collection) or {}
    path, text = spec.get("suite"), spec.get("suite_text")
    if not isinstance(path, str) or not path:
        return builtin_suite()
    try:
        if not isinstance(text, str):
            return load_suite(Path(path))
        with tempfile.TemporaryDirectory(prefix="planner-agent-suite-") as folder:
            kept = Path(folder) / Path(path).name  # the loader's messages keep the file's name
            kept.write_text(text, encoding="utf-8")
            return load_suite(kept)
    except TaskSpecError as exc:
        raise CoevolveError(f"collection {collection!r} ran suite {path}, which cannot be read now: {exc}") from exc


def demo_diff(calls: list[ToolCall], demo: list[ToolCall]) -> DemoDiff | None:
    """The first of ``calls`` that differs from ``demo`` (tool name first, then arguments:
    a name whose value differs, or that one side lacks); None when they agree throughout."""
    for i in range(max(len(calls), len(demo))):
        want = demo[i] if i < len(demo) else None
        got = calls[i] if i < len(calls) else None
        if want is None:
            return DemoDiff(i + 1, "extra", None, got)
        if got is None:
            return DemoDiff(i + 1, "missing", want, None)
        if got.name != want.name:
            return DemoDiff(i + 1, "tool", want, got)
        differ = tuple(sorted(k for k in want.arguments.keys() | got.arguments.keys()
                              if want.arguments.get(k) != got.arguments.get(k)))
        if differ:
            return DemoDiff(i + 1, "arguments", want, got, differ)
    return None


def _attempt(traj: Trajectory, task: TaskSpec | None) -> Attempt:
    calls = [s.tool_call for s in traj.steps if s.tool_call is not None]
    first = next((s for s in traj.steps if s.feedback.error is not None), None)
    diff = key = None
    if task is not None and task.demo:
        diff = demo_diff(calls, task.rendered_demo())
        key = diff.key(task.template) if diff is not None else MATCHES_DEMO
    tools = tuple(sorted({c.name for c in calls} - {"finish"}))
    repeated = any(s.feedback.error is not None and s.feedback.error.code is ErrorCode.repeated_action for s in traj.steps) \
        or any(a.name == b.name and a.arguments == b.arguments for a, b in zip(calls, calls[1:]))
    return Attempt(
        trajectory_id=traj.id, task_id=traj.task_id, success=bool(traj.verdict and traj.verdict.success), status=traj.status,
        category=task.category.value if task else None, domain=task.domain if task else None,
        error=first.feedback.error.code.value if first is not None and first.feedback.error else NO_ERROR,
        error_call=first.tool_call if first is not None else None,
        error_hint=first.feedback.error.hint if first is not None and first.feedback.error else "",
        demo=diff, demo_key=key, tools=tools, apps=tuple(sorted({tool_apps()[t] for t in tools if t in tool_apps()})),
        finished=any(c.name == "finish" for c in calls), repeated=repeated)


def analyze(store: TrajectoryStore, collection: str, suite: Suite | None = None) -> Analysis:
    """Cluster ``collection``'s verified failures (see the module's docstring). ``suite``: the
    tasks it ran (default: the one its recorded spec names). Raises :class:`CoevolveError` for a
    collection the store does not hold."""
    if not store.has_collection(collection):
        raise CoevolveError(f"no collection {collection!r} in {store.path} (see `planner-agent trajectories list`)")
    tasks = suite if suite is not None else collection_suite(store, collection)
    found: dict[str, TaskSpec | None] = {}

    def task_of(task_id: str | None) -> TaskSpec | None:
        if task_id is None:
            return None
        if task_id not in found:
            try:
                found[task_id] = find_task(task_id, tasks)
            except PlannerRuntimeError:  # a task the suite no longer has: counted by tool and error only
                found[task_id] = None
        return found[task_id]

    infra = sum(1 for i in store.ids(collection=collection, infra=True) if store.get(i).parent is None)
    attempts: list[Attempt] = []
    unscored = 0
    for trajectory_id in store.ids(collection=collection, infra=False):
        traj = store.get(trajectory_id)
        if traj.parent is not None:
            continue
        if traj.verdict is None or traj.verdict.failure_kind is FailureKind.spec:
            unscored += 1
            continue
        attempts.append(_attempt(traj, task_of(traj.task_id)))
    attempts.sort(key=lambda a: a.trajectory_id)
    slices = []
    for dimension in DIMENSIONS:
        total: dict[str, int] = defaultdict(int)
        failing: dict[str, list[str]] = defaultdict(list)
        for a in attempts:
            for key in a.keys(dimension):
                total[key] += 1
                if not a.success:
                    failing[key].append(a.trajectory_id)
        slices += [Slice(dimension, key, len(failing[key]), total[key], tuple(failing[key][:EXAMPLES])) for key in sorted(total)]
    failed = tuple(a for a in attempts if not a.success)
    return Analysis(collection, len(attempts), len(failed), infra, unscored, tuple(slices), failed)


def failure_gaps(store: TrajectoryStore, collection: str, suite: Suite) -> Gaps:
    """Where ``collection`` failed, by category, domain, tool and first error code, as the gaps
    ``tasks generate`` aims at (highest failure rate first)."""
    from planner_runtime.runs.generate import Gap, Gaps

    if not store.has_collection(collection):
        raise ConfigError(f"collection {collection!r} has no verified episodes in this store")
    found = analyze(store, collection, suite)
    if found.attempts == 0:
        raise ConfigError(f"collection {collection!r} has no verified episodes in this store")
    by_kind = {}
    for kind, dimension in (("category", "category"), ("domain", "domain"), ("tool", "tool"), ("error", "error")):
        gaps = [Gap(kind, s.key, s.failures, s.attempts) for s in found.slices if s.dimension == dimension
                and not (kind == "error" and s.key == NO_ERROR)]
        by_kind[kind] = tuple(sorted(gaps, key=lambda g: (-g.rate, -g.failures, g.name)))
    return Gaps(collection, found.attempts, found.failures, by_kind)
