"""Task spec files (YAML): a task's parameters and goal template, and reading suites of them.

A task is declarations, never a recorded click path: parameters fill the goal template, setup
actions seed the phone through Android mechanisms (content providers), and checks read the end
state back through adb (those two are declared in :mod:`planner_runtime.tasks.declarations`).
Loading validates everything and names the file, line and field of the first problem: every
template renders with every parameter set (:mod:`planner_runtime.tasks.templates`), and a
parameter in a ``where`` can only ever be data (see :mod:`planner_runtime.tasks.where`).
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import random
from collections import Counter
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, Field, ValidationError, model_validator

from planner_runtime.errors import TaskSpecError
from planner_runtime.contract import ToolCall
from planner_runtime.tasks.declarations import CheckSpec, SetupAction, SpecModel
from planner_runtime.tasks.demos import DemoCall, check_demo, render_demo
from planner_runtime.tasks.templates import FieldProblem, check_templates
from planner_runtime.tasks.where import parse_where
from planner_runtime.tasks.world import check_world
from planner_runtime.yaml_lines import line_of, read_yaml, validation_problems
from planner_runtime.harness.skills import default_skills_dir

SUITES_DIR = Path(__file__).parent / "suites"


class Category(StrEnum):
    tool = "tool"
    memory = "memory"
    skills = "skills"
    subagent = "subagent"


def _state_key(key: str) -> str:
    if not re.fullmatch(r"setting:(system|secure|global)/\S+|content:[\w.\-]+|file:/\S*", key):
        raise ValueError(f"{key!r} is no state key: write setting:NAMESPACE/KEY, content:AUTHORITY or file:/PATH")
    return key


class RandomValue(SpecModel):
    """A parameter drawn per episode from a seed: an integer in ``[lo, hi]`` or one of ``choice``."""

    int: tuple[builtins.int, builtins.int] | None = None  # the field is named as the YAML says it
    choice: tuple[Any, ...] | None = None

    @model_validator(mode="after")
    def _one(self) -> RandomValue:
        if (self.int is None) == (self.choice is None) or (self.choice is not None and not self.choice):
            raise ValueError("give exactly one of int: [lo, hi] or choice: [non-empty list]")
        if self.int is not None and self.int[0] > self.int[1]:
            raise ValueError("int: [lo, hi] needs lo <= hi")
        return self

    def draw(self, rng: random.Random) -> Any:
        return rng.randint(*self.int) if self.int is not None else rng.choice(self.choice)


class TaskSpec(SpecModel):
    id: str = Field(pattern=r"^[a-z0-9_.\-]+$")
    goal: str
    params: dict[str, Any] = Field(default_factory=dict)
    category: Category = Category.tool
    domain: str
    difficulty: str = "easy"
    source: str = "handwritten"
    requires_apps: tuple[str, ...] = ()  # packages that must be installed, else the task cannot run
    setup: tuple[SetupAction, ...] = ()
    checks: tuple[CheckSpec, ...] = Field(min_length=1)
    max_steps: int = Field(default=10, ge=1, le=100)
    # The user's replies to ask_user: question pattern (a case-insensitive regular expression
    # searched in the question) → answer (a template). Unmatched questions get no answer.
    user_answers: dict[str, str] = Field(default_factory=dict)
    # Parameters drawn per episode from a seed (see draw). A key also in params keeps that value
    # for seed 0, the instance the suite lists; every other seed draws it. Each seed is its own
    # instance "<id>@<seed>", so a template has no variants besides.
    random: dict[str, RandomValue] = Field(default_factory=dict)
    # More parameter sets for the same template: each becomes its own task "<id>@<n>" (n from 1).
    variants: tuple[dict[str, Any], ...] = ()
    # A reference solution (tool calls templated with the params): training data, never the verdict.
    demo: tuple[DemoCall, ...] = ()
    # Train or test; by default drawn from the template id, so all variants of a template share it.
    split: Literal["train", "test"] | None = None
    # Device state the checks read as the phone has it, set by no setup action (see tasks.state_coverage).
    assumes: tuple[Annotated[str, AfterValidator(_state_key)], ...] = ()

    @model_validator(mode="after")
    def _templates_render(self) -> TaskSpec:
        if self.random and self.variants:
            raise FieldProblem(("variants",), "a task with random parameters has an instance per seed (<id>@<seed>): "
                                              "give variants or random, not both")
        check_templates(self)
        check_world(self)
        check_demo(self, self.demo)
        return self

    @property
    def template(self) -> str:
        """The id shared by a task and its variants."""
        return self.id.split("@", 1)[0]

    @property
    def split_name(self) -> str:
        """``split`` if set, else one fifth of templates (by a stable hash of the id) are test."""
        if self.split is not None:
            return self.split
        return "test" if int(hashlib.sha1(self.template.encode()).hexdigest()[:8], 16) % 5 == 0 else "train"

    def draw(self, seed: int) -> TaskSpec:
        """This task with its random parameters drawn from ``seed`` (itself when it has none),
        named ``<id>@<seed>`` (seed 0: ``<id>``); the same seed always gives the same task, so an episode can be
        reproduced. Seed 0 keeps the values ``params`` gives (so adding random parameters to a
        template leaves its listed instance as it was). The copy has no random parameters left,
        so rendering it never draws again."""
        if not self.random:
            return self
        rng = random.Random(f"{self.id}:{seed}")
        drawn = {k: v.draw(rng) for k, v in self.random.items()}
        if seed == 0:
            drawn = {k: self.params.get(k, v) for k, v in drawn.items()}
        named = self.id if seed == 0 else f"{self.id}@{seed}"  # the listed id is the seed-0 instance's
        return self.model_copy(update={"id": named, "params": {**self.params, **drawn}, "random": {}})

    def expanded(self) -> list[TaskSpec]:
        """This task and one task per variant, each with its own parameters."""
        base = self.model_copy(update={"variants": ()})
        return [base] + [
            self.model_copy(update={"id": f"{self.id}@{n}", "params": {**self.params, **extra}, "variants": ()})
            for n, extra in enumerate(self.variants, start=1)
        ]

    @property
    def values(self) -> dict[str, Any]:
        """The parameters as the goal and checks use them: random ones not yet drawn take
        their seed-0 value, so an undrawn task reads like ``draw(0)``."""
        return self.draw(0).params

    def rendered_goal(self) -> str:
        return self.goal.format(**self.values)

    def render(self, text: str) -> str:
        values = self.values
        return text.format(**values) if values else text

    def rendered_demo(self) -> list[ToolCall]:
        """The demo's calls with this task's parameters (random ones as :attr:`values` has them)."""
        return render_demo(self.demo, self.values)

    def render_where(self, where: str) -> str:
        """A ``where`` template filled with this task's parameters as SQL values."""
        return parse_where(where).render(self.values)


class Suite(SpecModel):
    tasks: tuple[TaskSpec, ...] = Field(min_length=1)


def load_suite(path: Path | str) -> Suite:
    """Load and validate a suite file; raise :class:`TaskSpecError` naming line and field (the
    first problem; :func:`suite_problems` lists them all). A file loaded before and unchanged
    since (same size and modification time, same skills folder for the demos' tool schemas) is
    not read again: the suite is frozen, and the built-in one takes seconds to validate."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return _load(path)
    return _load_unchanged(str(path.resolve()), stat.st_mtime_ns, stat.st_size, str(default_skills_dir()))


@functools.lru_cache(maxsize=32)
def _load_unchanged(path: str, mtime_ns: int, size: int, skills: str) -> Suite:
    return _load(Path(path))


def _load(path: Path) -> Suite:
    suite, problems = _parse(path)
    if problems:
        raise problems[0]
    assert suite is not None
    return suite


def suite_problems(path: Path | str) -> list[TaskSpecError]:
    """Every problem of a suite file, in file order, one per field (none: the suite loads). A
    file that cannot be read or parsed as YAML has one problem: nothing past it can be checked."""
    return _parse(Path(path))[1]


def _parse(path: Path) -> tuple[Suite | None, list[TaskSpecError]]:
    data, node, problems = read_yaml(path)
    if problems:
        return None, problems
    if isinstance(data, list):  # a bare list of tasks is accepted too
        data, node = {"tasks": data}, yaml.MappingNode("tag:yaml.org,2002:map", [(yaml.ScalarNode("tag:yaml.org,2002:str", "tasks"), node)])
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        return None, validation_problems(path, node, exc)
    problems = []
    seen: set[str] = set()
    for i, task in enumerate(suite.tasks):
        if task.id in seen:
            problems.append(TaskSpecError(str(path), line_of(node, ["tasks", i, "id"]), f"tasks.{i}.id", f"duplicate task id {task.id!r}"))
        seen.add(task.id)
    if problems:
        return None, problems
    return Suite(tasks=tuple(t for task in suite.tasks for t in task.expanded())), []


def _every_builtin_suite() -> Suite:
    tasks = [t for path in sorted(SUITES_DIR.glob("*.yaml")) for t in load_suite(path).tasks]
    dupes = sorted(i for i, n in Counter(t.id for t in tasks).items() if n > 1)
    if dupes:
        raise TaskSpecError(str(SUITES_DIR), None, "id", f"task ids used in two built-in suites: {dupes}")
    return Suite(tasks=tuple(tasks))


def builtin_suite(name: str | None = None) -> Suite:
    """A built-in suite by name, or every built-in suite together (ids are unique across them)."""
    if name is None:
        from planner_runtime.harness.tools.simulated.family import FAMILIES_DIR
        from planner_runtime.tasks.suite_cache import cached

        skills = default_skills_dir()
        files = [*SUITES_DIR.glob("*.yaml"), *FAMILIES_DIR.glob("*.yaml"), *(skills.glob("*/SKILL.md") if skills.is_dir() else [])]
        return cached("builtin", files, _every_builtin_suite)
    path = SUITES_DIR / f"{name}.yaml"
    if not path.exists():
        names = sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))
        raise TaskSpecError(str(path), None, "suite", f"no built-in suite {name!r}; available: {', '.join(names)}")
    return load_suite(path)


def find_task(task_id: str, suite: Suite | None = None) -> TaskSpec:
    """The task named ``task_id``; ``<template>@<seed>`` names a template with random parameters
    drawn with that seed."""
    tasks = (suite or builtin_suite()).tasks
    for task in tasks:
        if task.id == task_id:
            return task
    template, _, seed = task_id.rpartition("@")
    if seed.isdigit():
        drawn = next((t for t in tasks if t.id == template and t.random), None)
        if drawn is not None:
            return drawn.draw(int(seed))
    raise TaskSpecError("<suite>", None, "id", f"no task {task_id!r}; see `planner-agent tasks list`")
