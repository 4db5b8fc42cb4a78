"""A task's demo is checked when its file is read: each call names a tool an episode can offer and
its arguments pass that tool's schema with every parameter set (params, variants, random
choices), naming the file, line and field; a random template's instances are ``<id>@<seed>``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner_runtime.errors import TaskSpecError
from planner_runtime.tasks.spec import find_task, load_suite, suite_problems

TASK = """\
tasks:
  - id: clock.alarm
    goal: "Set an alarm for {hour}:{minute:02d}"
    params: {hour: 7, minute: 30}
    domain: clock
    checks:
      - content: {uri: "content://com.android.deskclock/alarms", where: "hour={hour} AND minutes={minute}"}
EXTRA
    demo:
      - {name: set_alarm, arguments: {hour: "{hour}", minutes: "{minute}"}}
      - {name: finish, arguments: {answer: "Alarm set"}}
"""


def _suite(tmp_path, extra: str = "", old: str = "", new: str = ""):
    path = tmp_path / "s.yaml"
    path.write_text(TASK.replace("EXTRA\n", extra).replace(old, new))
    return path


def _problem(path) -> str:
    problems = suite_problems(path)
    assert problems, "the suite loaded"
    return str(problems[0])


def test_a_sound_demo_loads_with_its_parameters_typed(tmp_path):
    task = load_suite(_suite(tmp_path)).tasks[0]
    assert [(c.name, c.arguments) for c in task.rendered_demo()] == [
        ("set_alarm", {"hour": 7, "minutes": 30}), ("finish", {"answer": "Alarm set"})]


def test_an_unknown_tool_is_named_with_its_line(tmp_path):
    path = _suite(tmp_path, old="{name: set_alarm,", new="{name: set_alarms,")
    assert _problem(path) == f"{path}:9: tasks.0.demo.0.name: no tool named 'set_alarms' (did you mean 'set_alarm'?)"


def test_arguments_the_tool_refuses_after_substitution_name_the_parameter_set(tmp_path):
    # a variant whose hour is text: "{hour}" takes the value as is, and set_alarm wants a number
    path = _suite(tmp_path, extra='      - answer_contains: "{hour}"\n    variants: [{hour: 8}, {hour: "eight"}]\n',
                  old='      - content: {uri: "content://com.android.deskclock/alarms", where: "hour={hour} AND minutes={minute}"}\n', new="")
    path.write_text(path.read_text().replace("{hour}:{minute:02d}", "{hour}"))
    message = _problem(path)
    assert message.startswith(f"{path}:10: tasks.0.demo.0.arguments.hour: set_alarm: hour: ")
    assert message.endswith("(with variant 2)")


def test_an_argument_the_tool_does_not_take_is_refused(tmp_path):
    path = _suite(tmp_path, old='minutes: "{minute}"}', new='minutes: "{minute}", snooze: true}')
    assert "tasks.0.demo.0.arguments.snooze: set_alarm: snooze: Extra inputs are not permitted" in _problem(path)


def test_a_placeholder_with_no_parameter_is_refused(tmp_path):
    path = _suite(tmp_path, old='answer: "Alarm set"', new='answer: "Alarm set for {when}"')
    assert _problem(path) == f"{path}:10: tasks.0.demo.1.arguments: template does not render with params: no parameter 'when'"


def test_a_demo_ends_with_finish(tmp_path):
    path = _suite(tmp_path, old='      - {name: finish, arguments: {answer: "Alarm set"}}\n', new="")
    assert "tasks.0.demo.0.name: a demo ends with a finish call" in _problem(path)


def test_tasks_check_prints_the_demo_problem_and_exits_2(tmp_path):
    path = _suite(tmp_path, old="{name: set_alarm,", new="{name: sett_alarm,")
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "tasks", "check", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "tasks.0.demo.0.name: no tool named 'sett_alarm'" in " ".join(res.stderr.split())


RANDOM = """\
tasks:
  - id: clock.random_alarm
    goal: "Set an alarm for {hour}:{minute:02d}"
    random: {hour: {int: [5, 9]}, minute: {choice: [0, 15, 30, 45]}}
    domain: clock
    checks:
      - content: {uri: "content://com.android.deskclock/alarms", where: "hour={hour} AND minutes={minute}"}
    demo:
      - {name: set_alarm, arguments: {hour: "{hour}", minutes: "{minute}"}}
      - {name: finish, arguments: {answer: "Alarm set for {hour}:{minute:02d}"}}
"""


def test_a_random_template_has_an_instance_per_seed_named_by_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(RANDOM)
    suite = load_suite(path)
    drawn = [find_task(f"clock.random_alarm@{seed}", suite) for seed in range(8)]
    assert [t.id for t in drawn] == ["clock.random_alarm"] + [f"clock.random_alarm@{seed}" for seed in range(1, 8)]
    assert [t.params for t in drawn] == [suite.tasks[0].draw(seed).params for seed in range(8)]  # the same seed, the same task
    assert len({(t.params["hour"], t.params["minute"]) for t in drawn}) > 1
    assert all(t.rendered_demo()[0].arguments == {"hour": t.params["hour"], "minutes": t.params["minute"]} for t in drawn)
    assert all(t.template == "clock.random_alarm" for t in drawn)
    with pytest.raises(TaskSpecError, match="no task 'clock.random_alarm@x'"):
        find_task("clock.random_alarm@x", suite)


def test_random_parameters_and_variants_do_not_mix(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(RANDOM.replace("    domain: clock\n", "    domain: clock\n    variants: [{hour: 3}]\n"))
    assert "tasks.0.variants: a task with random parameters has an instance per seed" in _problem(path)
