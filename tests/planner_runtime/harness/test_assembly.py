"""One assembly for every entry: the same goal on the same phone is offered the same tools and
reads the same system prompt whether ``run``, ``collect``, ``replay --from-step`` or a delegated
sub-agent starts it — checked on what each stored, on the virtual phone."""

from __future__ import annotations

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.contract import Role, Trajectory
from planner_runtime.harness.assembly import SUBAGENT_PROMPT, EpisodeRole, plan_replan, plan_run, plan_subagent, replan_limits, run_limits
from planner_runtime.harness.episode import SYSTEM_PROMPT
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.subagents import Delegate, Lineage
from planner_runtime.harness.tools import ToolContext
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.collect import collect
from planner_runtime.runs.replay import replan
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task

TASK = find_task("clock.disable_alarm_gui").draw(seed=0)  # collect's first repeat draws with seed 0
GOAL = TASK.rendered_goal()
FINISH = {"name": "finish", "arguments": {"answer": "done"}}
FROM_OUTSIDE = {"ask_user", "remember", "recall", "delegate"}  # tools replay does not offer


def _offered(traj: Trajectory) -> list[str]:
    return [t.name for t in traj.tools]


def _prompt(traj: Trajectory) -> str:
    first = traj.steps[0].messages[0]
    assert first.role is Role.system
    return first.content


def test_run_collect_replay_and_delegate_share_one_plan(device, device_ref, store, tmp_path):
    identity = EpisodeIdentity(device=device_ref)
    ran = run_goal(GOAL, device=device, identity=identity, planner=ScriptedPlanner([FINISH]), store=store, task=TASK)
    assert ran.task_id == TASK.id and "skill_clock_alarm_off" in _offered(ran)  # the goal's skill is offered

    with DevicePool([VirtualSource(1)], state_dir=tmp_path / "pool") as pool:
        coll, _ = collect([find_task(TASK.id)], pool=pool, store=store, planner_for=lambda t: ScriptedPlanner([FINISH]), workers=1)
    [collected] = [store.get(i) for i in store.ids() if store.get(i).collection == coll]
    assert collected.item == f"{TASK.id}#0"
    assert collected.tools == ran.tools and _prompt(collected) == _prompt(ran)

    replanned = replan(ran, 0, planner=ScriptedPlanner([FINISH]), device=device, identity=identity, store=store, task=TASK)
    assert _offered(replanned) == [n for n in _offered(ran) if n not in FROM_OUTSIDE]

    delegate = {"name": "delegate", "arguments": {"goal": GOAL, "tools": [], "budget": 2}}
    parent = run_goal(GOAL, device=device, identity=identity, planner=ScriptedPlanner([delegate, FINISH, FINISH]), store=store)
    child = store.get(parent.steps[0].feedback.result["trajectory"])
    assert child.parent == parent.id and child.task_id is None
    assert _offered(child) == [n for n in _offered(ran) if n != "delegate"]
    assert _prompt(child) == _prompt(ran).replace(SYSTEM_PROMPT, f"{SYSTEM_PROMPT}\n\n{SUBAGENT_PROMPT}", 1)

    # and each is what the assembly plans for those inputs
    ctx = ToolContext(device=device, gate=SafetyGate())
    limits = run_limits(task_steps=TASK.max_steps)
    lineage = Lineage(planner=ScriptedPlanner([]), store=store, identity=identity, parent_id=ran.id, limits=limits)
    run_plan = plan_run(GOAL, ctx, limits=limits, trajectory_id=ran.id, delegate=lambda tools: Delegate(tools, lineage))
    assert run_plan.tools.specs() == list(ran.tools) and run_plan.role is EpisodeRole.main
    assert run_plan.system_prompt == _prompt(ran) and run_plan.limits.max_steps == TASK.max_steps
    replan_plan = plan_replan(GOAL, ctx, limits=replan_limits(recorded_steps=1, from_step=0), recorded=set(_offered(ran)))
    assert replan_plan.tools.names() == _offered(replanned) and replan_plan.role is EpisodeRole.replan
    sub_plan = plan_subagent(GOAL, ctx, parent_tools=run_plan.tools, limits=run_plan.limits)
    assert sub_plan.system_prompt == _prompt(child) and sub_plan.role is EpisodeRole.subagent


def _imports(module: str) -> set[str]:
    """The ``planner_runtime`` modules ``module`` imports anywhere in its source, functions included."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("planner_runtime"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if importlib.util.find_spec(node.module).submodule_search_locations}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("planner_runtime")}
    return {m for m in found if importlib.util.find_spec(m) is not None}


def _reaches(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in _imports(todo.pop()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_tool_choice_and_assembly_do_not_import_the_sub_agent_tool():
    # subagents plans its child episodes with the assembly and the toolbox: an arrow back is a cycle
    assert "planner_runtime.harness.subagents" not in _reaches("planner_runtime.harness.toolbox")
    assert "planner_runtime.harness.subagents" not in _reaches("planner_runtime.harness.assembly")
