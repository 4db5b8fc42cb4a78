"""Task construction from capability gaps: read where a collection failed, write new executable
specs aimed there, and keep only those that pass every gate.

:class:`Gaps` are where a collection failed, by category, domain, tool and first error code, each
as a failure rate (counted by :func:`planner_runtime.coevolve.analysis.failure_gaps`, which
also clusters failures for proposals). Candidates are then written for the weakest categories and
domains:

- **compositions**: an instance of a template from a gap, followed by an instance of a template
  from another domain whose state it does not share, as one cross-app task (its goal joins the
  two, its setups, checks, user answers and demos are both tasks', the second's parameters
  renamed ``b_*``; its final answer carries both answers). Harder by construction;
- **recombinations** and **tight variants** (:mod:`planner_runtime.runs.variations`): new
  points of a template's parameter space, and instances that fail a wasted step;
- **phrasings** (with an OpenAI-compatible endpoint): new goal wordings of a gap's templates that
  keep every parameter, so their checks and demos still hold.

A candidate is a :class:`TaskSpec`, so building it already runs the spec's own checks (templates
render, world names exist, the demo fits the tool schemas). :func:`gate` then runs the audit (a
do-nothing planner, and an answer naming everything, must both fail) and plays the demo, which
must pass its own verifier. Whatever fails a gate is reported with the reason and never written.
A composite inherits the test split when either part is held out, so generated data never
carries a held-out template into training.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import urlparse

import yaml

from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.runs.variations import weakest_first
from planner_runtime.tasks.spec import Category, Suite, TaskSpec
from planner_runtime.trajectories.store import TrajectoryStore

_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)([^{}]*)\}")
_ID_UNSAFE = re.compile(r"[^a-z0-9_.\-]+")


@dataclass(frozen=True)
class Gap:
    """One axis value where the collection failed: ``failures`` of ``episodes``."""

    kind: str  # category | domain | tool | error
    name: str
    failures: int
    episodes: int

    @property
    def rate(self) -> float:
        return self.failures / self.episodes if self.episodes else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "failures": self.failures, "episodes": self.episodes,
                "rate": round(self.rate, 3)}


@dataclass(frozen=True)
class Gaps:
    collection: str
    episodes: int
    failures: int
    by_kind: dict[str, tuple[Gap, ...]]

    def top(self, kind: str) -> list[Gap]:
        """The failing values of ``kind``, highest failure rate first (then most failures)."""
        return [g for g in self.by_kind.get(kind, ()) if g.failures]

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "episodes": self.episodes, "failures": self.failures,
                **{k: [g.to_json() for g in v] for k, v in self.by_kind.items()}}


# -- compositions --------------------------------------------------------------------------------
_STATE = {"content_insert", "content_delete", "content", "world", "settings_put", "setting", "file_push", "file",
          "folder_empty", "memory"}  # the setup actions and checks that touch state (not answers nor calls)


def _target(kind: str, body: dict[str, Any]) -> str:
    if "uri" in body:
        return f"content:{urlparse(body['uri']).netloc}"
    if kind == "world":
        return f"world:{str(body['collection']).split('.', 1)[0]}"
    if kind in ("settings_put", "setting"):
        return f"setting:{body.get('namespace')}/{body.get('key')}"
    if kind in ("file_push", "file", "folder_empty"):
        return "files"
    return kind  # memory: one profile per episode


def footprint(task: TaskSpec) -> set[str]:
    """The state ``task`` seeds or checks (content authorities, settings, files, world families,
    memory): two tasks compose only when theirs are disjoint. Checks of the answer or of the
    calls made touch no state, so two tasks may both have them."""
    return {_target(kind, body) for part in (*task.setup, *task.checks)
            for kind, body in part.model_dump(exclude_none=True).items() if kind in _STATE}


def _rename(value: Any, names: set[str]) -> Any:
    """``value`` with every ``{p...}`` placeholder of a name in ``names`` written ``{b_p...}``."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: f"{{b_{m.group(1)}{m.group(2)}}}" if m.group(1) in names else m.group(0), value)
    if isinstance(value, dict):
        return {k: _rename(v, names) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rename(v, names) for v in value]
    return value


def _fixed(task: TaskSpec) -> dict[str, Any]:
    """``task`` as plain data, one instance: its parameter values fixed, no variants or random."""
    data = task.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data["params"] = dict(task.values)
    data.pop("random", None)
    data.pop("variants", None)
    return data


def _composable(task: TaskSpec) -> bool:
    return (len(task.demo) >= 2 and task.demo[-1].name == "finish" and "answer" in task.demo[-1].arguments
            and not any(c.max_steps_used is not None for c in task.checks))


def compose(a: TaskSpec, b: TaskSpec) -> TaskSpec:
    """One task doing ``a`` and then ``b`` (instances; see the module's docstring). Raises
    ValueError (a pydantic ValidationError or a refusal) when they cannot make one."""
    if not (_composable(a) and _composable(b)):
        raise ValueError("both demos must end with finish(answer)")
    if footprint(a) & footprint(b):
        raise ValueError(f"they share state: {sorted(footprint(a) & footprint(b))}")
    da, db = _fixed(a), _rename(_fixed(b), set(b.values))
    db["params"] = {f"b_{k}": v for k, v in b.values.items()}
    last_a, last_b = da["demo"][-1]["arguments"]["answer"], db["demo"][-1]["arguments"]["answer"]
    demo = da["demo"][:-1] + db["demo"][:-1] + [{"name": "finish", "arguments": {"answer": f"{last_a} {last_b}"}}]
    second = db["goal"][:1].lower() + db["goal"][1:] if not db["goal"][:2].isupper() else db["goal"]
    categories = {a.category, b.category}
    category = next((c for c in (Category.subagent, Category.memory) if c in categories), Category.skills)
    data = {
        "id": _ID_UNSAFE.sub("-", f"gen.{a.id.replace('@', '-')}.{b.id.replace('@', '-')}".lower())[:120],
        "goal": f"{da['goal'].rstrip('.!? ')}, and then {second}",
        "params": {**da["params"], **db["params"]},
        "category": category.value, "domain": a.domain, "difficulty": "hard", "source": "generated",
        "requires_apps": sorted({*a.requires_apps, *b.requires_apps}),
        "setup": [*da.get("setup", []), *db.get("setup", [])],
        "checks": [*da["checks"], *db["checks"]],
        "max_steps": min(100, a.max_steps + b.max_steps),
        "user_answers": {**da.get("user_answers", {}), **db.get("user_answers", {})},
        "demo": demo,
        "split": "test" if "test" in (a.split_name, b.split_name) else "train",
        "assumes": sorted({*a.assumes, *b.assumes}),
    }
    return TaskSpec.model_validate(data)


def _instances(suite: Suite) -> dict[str, TaskSpec]:
    """One instance per template (its listed one), composable ones only."""
    found: dict[str, TaskSpec] = {}
    for task in suite.tasks:
        if task.template not in found and _composable(task):
            found[task.template] = task.draw(0)
    return found


def compositions(suite: Suite, gaps: Gaps, limit: int) -> list[TaskSpec]:
    """Up to ``limit`` compositions, each starting with a template of the weakest categories and
    domains (in the gaps' order), followed by one of another domain; round-robin over the gaps
    so no single domain takes every slot."""
    pool = _instances(suite)
    weak = [g.name for g in gaps.top("domain")] or sorted({t.domain for t in pool.values()})
    firsts = weakest_first(pool.values(), weak, [g.name for g in gaps.top("category")])
    seconds = sorted(pool.values(), key=lambda t: t.template)
    made: list[TaskSpec] = []
    used_seconds: Counter[str] = Counter()
    for first in firsts:
        if len(made) >= limit:
            break
        for second in sorted(seconds, key=lambda t: (used_seconds[t.domain], used_seconds[t.template], t.template)):
            if second.domain == first.domain:
                continue
            try:
                made.append(compose(first, second))
            except (ValueError, PlannerRuntimeError):
                continue
            used_seconds.update([second.domain, second.template])
            break
    return made


# -- phrasings over an LLM ---------------------------------------------------------------------------
def phrasings(suite: Suite, gaps: Gaps, endpoint: str, limit: int, *, model: str = "planner",
              timeout: float = 30.0) -> tuple[list[TaskSpec], list[str]]:
    """New goal wordings for the weakest templates from ``endpoint`` (OpenAI-compatible). A
    wording must keep exactly the template's placeholders; anything else is refused with a
    reason (the second list), as is an endpoint that is down or answers nonsense."""
    import httpx

    base = endpoint.rstrip("/")
    url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
    weak = [g.name for g in gaps.top("domain")]
    templates = [t for t in {t.template: t for t in suite.tasks}.values() if t.domain in weak]
    templates.sort(key=lambda t: (weak.index(t.domain), t.template))
    made, refused = [], []
    for task in templates:
        if len(made) >= limit:
            break
        want = set(_PLACEHOLDER.findall(task.goal))
        prompt = (f"Rewrite this phone assistant request in 3 different natural ways. Keep every {{placeholder}} "
                  f"exactly as written. Answer with a JSON list of strings only.\nRequest: {task.goal}")
        try:
            reply = httpx.post(url, json={"model": model, "messages": [{"role": "user", "content": prompt}],
                                          "temperature": 0.7}, timeout=timeout)
            reply.raise_for_status()
            text = reply.json()["choices"][0]["message"]["content"]
            wordings = json.loads(text[text.index("["): text.rindex("]") + 1])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            refused.append(f"{task.template}: the endpoint gave no usable answer ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        for n, goal in enumerate(wordings if isinstance(wordings, list) else [], start=1):
            if not isinstance(goal, str) or set(_PLACEHOLDER.findall(goal)) != want or goal == task.goal:
                refused.append(f"{task.template}: wording {n} changes the placeholders or repeats the goal: {str(goal)[:120]!r}")
                continue
            data = task.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            data.update(id=f"gen.{task.template}.p{n}", goal=goal, source="generated", split=task.split_name)
            try:
                made.append(TaskSpec.model_validate(data))
            except (ValueError, PlannerRuntimeError) as exc:
                refused.append(f"{task.template}: wording {n}: {str(exc)[:160]}")
            if len(made) >= limit:
                break
    return made, refused


# -- the gates -------------------------------------------------------------------------------------
@dataclass
class Verdicts:
    accepted: list[TaskSpec] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (task id, why)


def gate(candidates: Sequence[TaskSpec], known: Iterable[str], *, store: TrajectoryStore, workers: int,
         state_dir: Path) -> Verdicts:
    """Keep the candidates whose id is new, whose audit flags nothing and whose demo passes."""
    from device_farm.pool.pool import DevicePool
    from device_farm.virtual.source import VirtualSource
    from planner_runtime.runs.audit import audit, builtin_phones
    from planner_runtime.runs.demos import check_demos

    out = Verdicts()
    taken = set(known)
    fresh = []
    for task in candidates:
        if task.id in taken:
            out.rejected.append((task.id, "the id is already a task"))
        else:
            taken.add(task.id)
            fresh.append(task)
    if not fresh:
        return out
    with builtin_phones() as phones:
        audited = {r.task_id: r for r in audit(fresh, phones, store)}
    with DevicePool([VirtualSource(workers, home=state_dir / "adb-home")], state_dir=state_dir / "pool") as pool:
        _, _, failures = check_demos(fresh, pool=pool, store=store, workers=workers)
    demo_failed = {f.task_id: f.reason for f in failures}
    for task in fresh:
        result = audited.get(task.id)
        if result is None or not result.ran:
            out.rejected.append((task.id, f"the audit could not run it: {result.error if result else 'no result'}"))
        elif result.flagged:
            out.rejected.append((task.id, "the audit flags it: " + ("passes without acting" if result.passes_without_acting
                                                                    else "passes by naming everything or spraying numbers")))
        elif task.id in demo_failed:
            out.rejected.append((task.id, f"its demo fails its verifier: {demo_failed[task.id]}"))
        else:
            out.accepted.append(task)
    return out


def write_suite(tasks: Sequence[TaskSpec], path: Path, header: str) -> None:
    """The accepted tasks as a suite file `tasks check` and `--suite` read (written to a new
    file, then renamed in: never half a file)."""
    rows = [t.model_dump(mode="json", exclude_none=True, exclude_defaults=True) for t in tasks]
    text = "".join(f"# {line}\n" for line in header.splitlines()) + yaml.safe_dump(
        {"tasks": rows}, sort_keys=False, allow_unicode=True, width=120)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
