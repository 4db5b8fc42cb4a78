"""A task's simulated world: the rows it seeds, the end state its ``world`` checks read, and
whether it needs a world at all.

Every name a task gives — a ``family.collection``, a field in a row, a ``match`` or a checked
``field`` — is checked against the declared families when the task is loaded, and every seeded
row must fit its collection with each parameter set the task can be given, so a typo is found
with its file, line and field, not by an episode. The families are read only when a task uses
a world, so loading other suites imports nothing of the tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner_runtime.contract import Check
from planner_runtime.errors import TaskCheckError
from planner_runtime.tasks.declarations import CheckSpec
from planner_runtime.tasks.demos import fill
from planner_runtime.tasks.templates import FieldProblem, Templated, value_sets

if TYPE_CHECKING:
    from planner_runtime.harness.tools.simulated.world import World


def _families() -> Any:
    from planner_runtime.harness.tools.simulated.tool import families

    return families()


def declares_world(task: Templated) -> bool:
    return any(a.world is not None for a in task.setup) or any(c.world is not None for c in task.checks)


def uses_world(task: Any) -> bool:
    """The task seeds or checks the simulated world, or its demo calls a simulated tool."""
    if declares_world(task):
        return True
    demo = getattr(task, "demo", ())
    if not demo:
        return False
    names = {t.name for f in _families().values() for t in f.tools}
    return any(call.name in names for call in demo)


def _collection(families: Any, name: str, loc: tuple[str | int, ...]) -> Any:
    family, _, coll = name.partition(".")
    if family not in families:
        raise FieldProblem(loc, f"no simulated family {family!r} (families: {', '.join(sorted(families))})")
    if coll not in families[family].collections:
        raise FieldProblem(loc, f"family {family} has no collection {coll!r} ({', '.join(families[family].collections)})")
    return families[family].collections[coll]


def check_world(task: Templated) -> None:
    """Raise :class:`FieldProblem` at the first world name or seeded row that does not fit."""
    if not declares_world(task):
        return
    from planner_runtime.harness.tools.simulated.family import split_key
    from planner_runtime.harness.tools.simulated.world import World, WorldError

    families = _families()
    for i, action in enumerate(task.setup):
        if action.world is None:
            continue
        at = ("setup", i, "world")
        coll = _collection(families, action.world.collection, at + ("collection",))
        for n, row in enumerate(action.world.rows):
            for key in row:
                if key not in coll.fields:
                    raise FieldProblem(at + ("rows", n, key), f"no field {key!r} in {action.world.collection} ({', '.join(coll.fields)})")
        for label, values in value_sets(task):
            world = World.fresh(families)
            try:
                world.seed(action.world.collection, [fill(dict(r), values) for r in action.world.rows], replace=action.world.replace)
            except WorldError as exc:
                raise FieldProblem(at + ("rows",), f"{exc} (with {label})") from None
    for i, check in enumerate(task.checks):
        if check.world is None:
            continue
        at = ("checks", i, "world")
        coll = _collection(families, check.world.collection, at + ("collection",))
        for key in check.world.match:
            if split_key(key)[0] not in coll.fields:
                raise FieldProblem(at + ("match", key), f"no field {split_key(key)[0]!r} in {check.world.collection} ({', '.join(coll.fields)})")
        if check.world.field is not None and check.world.field not in coll.fields:
            raise FieldProblem(at + ("field",), f"no field {check.world.field!r} in {check.world.collection} ({', '.join(coll.fields)})")


def world_for(task: Any, simulator: Any = None) -> World:
    """The world ``task``'s episode starts in: every family's rows, then the task's seeds."""
    from planner_runtime.harness.tools.simulated.world import World

    world = World.fresh(_families())
    world.simulator = simulator
    for action in task.setup:
        if action.world is not None:
            world.seed(action.world.collection, [fill(dict(r), task.values) for r in action.world.rows], replace=action.world.replace)
    return world


def task_world(task: Any, simulator: Any = None) -> World | None:
    """The world of ``task``'s episode when it uses one (see :func:`uses_world`), else None:
    ``run``, ``replay`` and the audit all start an episode's world here."""
    return world_for(task, simulator) if task is not None and uses_world(task) else None


def _equal(have: Any, want: Any, tolerance: float) -> bool:
    if isinstance(have, (int, float)) and not isinstance(have, bool):
        try:
            return abs(float(have) - float(want)) <= tolerance + 1e-9
        except (TypeError, ValueError):
            return False
    if isinstance(have, bool):
        return str(have).lower() == str(want).lower()
    return " ".join(str(have).casefold().split()) == " ".join(str(want).casefold().split())


def world_check(task: Any, spec: CheckSpec, world: World | None) -> Check:
    """Judge a ``world`` check on the episode's end state."""
    c = spec.world
    assert c is not None
    if world is None:
        raise TaskCheckError("the task checks the simulated world, but its episode ran without one")
    match = {k: fill(v, task.values) for k, v in c.match.items()}
    rows = world.select(c.collection, match)
    bound = f"{c.min}..{c.max if c.max is not None else '∞'}"
    ok = len(rows) >= c.min and (c.max is None or len(rows) <= c.max)
    evidence = f"{len(rows)} row(s) of {c.collection}" + (f" matching {match}" if match else "") + f" (want {bound})"
    if c.field is not None:
        want = fill(c.equals, task.values)
        held = [r.get(c.field) for r in rows]
        ok = ok and all(_equal(h, want, c.tolerance) for h in held)
        evidence += f"; {c.field} = {held[:5]} (want {want!r})"
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in rows[:3])
    return Check(name=spec.name or f"world {c.collection}", passed=ok, evidence=evidence + (f": {shown}" if shown else ""))
