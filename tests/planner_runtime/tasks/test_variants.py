"""Task templates with variants: each parameter set is its own task, verified on the virtual
phone by a planner that does the right thing for those parameters; splits follow templates."""

from __future__ import annotations

import pytest

from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite, load_suite
from planner_runtime.harness.identity import EpisodeIdentity

SUITE = builtin_suite()
SOLVERS = {
    "clock.set_alarm": lambda p: [{"name": "set_alarm", "arguments": {"hour": p["hour"], "minutes": p["minute"]}}],
    "contacts.add_contact": lambda p: [{"name": "add_contact", "arguments": {"name": p["name"], "phone": p["phone"]}}],
    "contacts.lookup_number": lambda p: [{"name": "skill_contacts_lookup", "arguments": {"name": p["name"]}}],
    "messages.send_text": lambda p: [{"name": "send_message", "arguments": {"to": p["number"], "text": p["text"]}}],
    "phone.call_number": lambda p: [{"name": "call", "arguments": {"to": p["number"]}}],
}
VARIANTS = [t for t in SUITE.tasks if t.template in SOLVERS]


def test_the_builtin_suites_hold_at_least_100_tasks_split_by_template():
    assert len(SUITE.tasks) >= 100
    by_template: dict[str, set[str]] = {}
    for task in SUITE.tasks:
        by_template.setdefault(task.template, set()).add(task.split_name)
    assert all(len(splits) == 1 for splits in by_template.values())  # a template never straddles splits
    assert {"train", "test"} <= {t.split_name for t in SUITE.tasks}
    assert {t.category.value for t in SUITE.tasks} == {"tool", "memory", "skills", "subagent"}


def test_variants_expand_with_their_own_parameters(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("tasks:\n  - id: a.alarm\n    goal: 'Alarm at {h}'\n    params: {h: 7}\n    variants: [{h: 8}, {h: 9}]\n"
                    "    split: test\n    domain: clock\n    checks:\n      - answer_contains: '{h}'\n")
    tasks = load_suite(path).tasks
    assert [(t.id, t.rendered_goal(), t.split_name) for t in tasks] == [
        ("a.alarm", "Alarm at 7", "test"), ("a.alarm@1", "Alarm at 8", "test"), ("a.alarm@2", "Alarm at 9", "test")]
    path.write_text(path.read_text().replace("{h: 9}", "{x: 9}").replace("'Alarm at {h}'", "'Alarm at {h} {x}'"))
    with pytest.raises(Exception, match="variant|params"):
        load_suite(path)


@pytest.mark.parametrize("task", VARIANTS, ids=[t.id for t in VARIANTS])
def test_every_variant_is_solvable(task, device, device_ref, store):
    answer = task.params.get("phone", "done")
    script = SOLVERS[task.template](task.params) + [{"name": "finish", "arguments": {"answer": str(answer)}}]
    gate = SafetyGate(policy=Policy(allow={Sensitivity.send, Sensitivity.call}))
    traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=task, gate=gate)
    assert traj.verdict.success, (traj.steps[0].feedback, traj.verdict)


def test_random_parameters_are_drawn_from_a_seed_and_verified(tmp_path, device, device_ref, store):
    path = tmp_path / "s.yaml"
    path.write_text(
        "tasks:\n  - id: clock.random_alarm\n    goal: 'Set an alarm for {hour}:{minute:02d}'\n"
        "    random: {hour: {int: [5, 9]}, minute: {choice: [0, 15, 30, 45]}}\n    domain: clock\n"
        "    setup:\n      - content_delete: {uri: 'content://com.android.deskclock/alarms'}\n"
        "    checks:\n      - content: {uri: 'content://com.android.deskclock/alarms', where: 'hour={hour} AND minutes={minute}'}\n"
    )
    task = load_suite(path).tasks[0]
    drawn = [task.draw(seed) for seed in range(6)]
    assert [t.params for t in drawn] == [t.params for t in (task.draw(seed) for seed in range(6))]  # reproducible
    assert len({(t.params["hour"], t.params["minute"]) for t in drawn}) > 1
    assert all(5 <= t.params["hour"] <= 9 and t.params["minute"] in (0, 15, 30, 45) for t in drawn)
    assert task.rendered_goal() == task.draw(0).rendered_goal()  # undrawn reads like seed 0
    one = drawn[3]
    script = [{"name": "set_alarm", "arguments": {"hour": one.params["hour"], "minutes": one.params["minute"]}},
              {"name": "finish", "arguments": {"answer": "set"}}]
    traj = run_goal(one.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=one)
    assert traj.verdict.success
    path.write_text(path.read_text().replace("{int: [5, 9]}", "{int: [9, 5]}"))
    with pytest.raises(Exception, match="lo <= hi"):
        load_suite(path)
