"""Task spec files: the built-in suite loads; bad files name their line and field."""

import pytest

from planner_runtime.errors import TaskSpecError
from planner_runtime.tasks.spec import builtin_suite, load_suite


def test_builtin_suite_has_the_skeleton_tasks():
    suite = builtin_suite()
    assert {t.id for t in suite.tasks} >= {
        "clock.set_alarm", "contacts.add_contact", "clock.disable_alarm_gui", "contacts.lookup_number", "memory.usual_wake_alarm"
    }
    assert {t.category.value for t in suite.tasks} >= {"tool", "skills", "memory"}
    assert builtin_suite("skeleton").tasks[0].rendered_goal() == "Set an alarm for 7:30"


def _write(tmp_path, text):
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


GOOD = """\
tasks:
  - id: a.one
    goal: "Set an alarm for {hour}:00"
    params: {hour: 7}
    domain: clock
    checks:
      - content: {uri: "content://com.android.deskclock/alarms"}
"""


def test_a_valid_file_loads(tmp_path):
    assert load_suite(_write(tmp_path, GOOD)).tasks[0].rendered_goal() == "Set an alarm for 7:00"


def test_bad_uri_names_line_and_field(tmp_path):
    path = _write(tmp_path, GOOD.replace("content://com.android.deskclock/alarms", "http://x"))
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert info.value.line == 7
    assert info.value.field == "tasks.0.checks.0.content.uri"
    assert f"{path}:7" in str(info.value)


def test_missing_field_names_the_task(tmp_path):
    path = _write(tmp_path, GOOD.replace("    domain: clock\n", ""))
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert info.value.field == "tasks.0.domain" and info.value.line == 2


def test_check_with_two_kinds_is_rejected(tmp_path):
    path = _write(tmp_path, GOOD.replace("      - content:", '      - answer_contains: "x"\n        content:'))
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert "exactly one" in info.value.message and info.value.line == 7


def test_goal_that_does_not_render(tmp_path):
    path = _write(tmp_path, GOOD.replace("{hour}:00", "{minute}:00"))
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert "goal template" in info.value.message


def test_yaml_syntax_error_names_line(tmp_path):
    path = _write(tmp_path, GOOD + "  - id: [unclosed\n")
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert info.value.field == "yaml" and info.value.line is not None


def test_duplicate_ids_are_rejected(tmp_path):
    body = GOOD.split("\n", 1)[1]
    path = _write(tmp_path, "tasks:\n" + body + body)
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert "duplicate" in info.value.message and info.value.line == 8


def test_memory_setup_loads_and_an_intent_without_trigger_names_its_line(tmp_path):
    good = GOOD.replace("    domain: clock\n", "    domain: clock\n    setup:\n      - memory: {kind: preference, text: 'I wake at {hour}'}\n")
    task = load_suite(_write(tmp_path, good)).tasks[0]
    assert task.setup[0].memory.kind == "preference" and task.render(task.setup[0].memory.text) == "I wake at 7"
    bad = good.replace("{kind: preference,", "{kind: intent,")
    with pytest.raises(TaskSpecError) as info:
        load_suite(_write(tmp_path, bad))
    assert info.value.line == 7 and "trigger" in info.value.message


def test_an_impossible_row_count_is_rejected(tmp_path):
    path = _write(tmp_path, GOOD.replace('content: {uri: "content://com.android.deskclock/alarms"}',
                                         'content: {uri: "content://com.android.deskclock/alarms", max: 0}'))
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert "min: 0, max: 0" in info.value.message and info.value.line == 7


def test_an_undrawn_task_reads_like_seed_0_and_a_drawn_one_stays_drawn(tmp_path):
    """A key in both params and random keeps its params value for seed 0, the listed instance, in
    the listed goal as in the run; other seeds draw it."""
    task = load_suite(_write(tmp_path, GOOD.replace("    params: {hour: 7}\n",
                                                    "    params: {hour: 7}\n    random: {hour: {int: [1, 99]}}\n"))).tasks[0]
    drawn = task.draw(0)
    assert task.rendered_goal() == drawn.rendered_goal() == f"Set an alarm for {drawn.params['hour']}:00"
    assert task.values == drawn.params
    assert drawn.params["hour"] == 7 and drawn.id == task.id
    assert {task.draw(seed).params["hour"] for seed in range(1, 6)} != {7}  # other seeds draw over params
    assert task.draw(3).id == f"{task.id}@3"
    assert not drawn.random and drawn.draw(1) is drawn  # rendering a drawn task never draws again
