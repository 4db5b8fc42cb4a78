"""Task parameters are data, never SQL: a hostile parameter in a setup's or a check's ``where``
selects only its own row on the virtual phone (through the real adb server), and a ``where`` that
a parameter could break out of is refused when the file is loaded, naming its line and field."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from device_farm.android import content_insert, content_query
from planner_runtime.contract import DeviceRef, Source, Trajectory, TrajectoryStatus
from planner_runtime.errors import TaskSpecError
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import load_suite
from planner_runtime.tasks.verifiers import verify
from planner_runtime.tasks.where import WhereError, parse_where

CONTACTS = "content://com.android.contacts/raw_contacts"
HOSTILE = [
    "nobody' OR '1'='1",
    "x'); DELETE FROM contacts; --",
    "$(rm -f /sdcard/keep.txt)",
    "a; rm -f /sdcard/keep.txt; echo '",
    "`rm -f /sdcard/keep.txt` \"$HOME\" \\' %_",
    "two\nlines' OR ''='",
]

SUITE = """\
tasks:
  - id: hostile.delete
    goal: "Forget {{name}}"
    params: {{name: {name}, keep: "Ada Lovelace"}}
    domain: contacts
    setup:
      - content_delete: {{uri: "{uri}"}}
      - content_insert: {{uri: "{uri}", values: {{display_name: "Ada Lovelace", phone: "+1 555 0100"}}}}
      - content_insert: {{uri: "{uri}", values: {{display_name: "{{name}}", phone: "+1 555 0666"}}}}
      - content_insert: {{uri: "{uri}", values: {{display_name: "Grace Hopper", phone: "+1 555 0199"}}}}
      - content_delete: {{uri: "{uri}", where: "display_name='{{name}}'"}}
    checks:
      - name: the named contact is gone
        content: {{uri: "content://com.android.contacts/contacts", where: "display_name='{{name}}'", min: 0, max: 0}}
      - name: the others are kept
        content: {{uri: "content://com.android.contacts/contacts", where: "display_name='{{keep}}' OR display_name='Grace Hopper'", min: 2, max: 2}}
"""


def _yaml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _write(tmp_path, body: str):
    path = tmp_path / "suite.yaml"
    path.write_text(body)
    return path


def _traj() -> Trajectory:
    return Trajectory(goal="g", source=Source.sandbox, device=DeviceRef(serial="x"), planner="scripted",
                      status=TrajectoryStatus.finished, answer="done")


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_parameter_deletes_only_its_own_row(tmp_path, device, name):
    device.push(b"still here", "/sdcard/keep.txt")
    task = load_suite(_write(tmp_path, SUITE.format(name=_yaml_string(name), uri=CONTACTS))).tasks[0]
    assert task.values["name"] == name
    seed(task, device)
    left = sorted(r["display_name"] for r in content_query(device, "content://com.android.contacts/contacts"))
    assert left == ["Ada Lovelace", "Grace Hopper"]
    assert device.shell(["cat", "/sdcard/keep.txt"]).output == "still here"
    verdict = verify(task, device, _traj())
    assert verdict.success, verdict.checks
    # the same check sees the hostile row while it is there, and only it
    content_insert(device, CONTACTS, {"display_name": name})
    assert [c.passed for c in verify(task, device, _traj()).checks] == [False, True]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30))
def test_any_text_parameter_selects_exactly_its_row(device, value):
    """Through `adb shell content query --where`: the rendered clause matches the one row whose
    value is exactly the parameter, whatever quotes, `;`, `$`, `%` or backslashes it holds."""
    device.shell(["content", "delete", "--uri", CONTACTS])
    for other in ("Ada Lovelace", value + "x", "x" + value):
        content_insert(device, CONTACTS, {"display_name": other})
    content_insert(device, CONTACTS, {"display_name": value})
    where = parse_where("display_name = '{v}' AND 1 = {one}").render({"v": value, "one": 1})
    rows = content_query(device, "content://com.android.contacts/contacts", projection=["display_name"], where=where)
    assert [r["display_name"] for r in rows] == [value]


@pytest.mark.parametrize("where, message", [
    ("display_name = {name}", "outside a quoted literal, where only a number is data"),
    ("display_name LIKE '%{name}%'", "pattern of LIKE"),
    ("display_name NOT GLOB {n}", "pattern of GLOB"),
    ("display_name LIKE 'a!%' ESCAPE '{name}'", "pattern of ESCAPE"),
    ('"{name}" = 1', "quoted identifier"),
    ("[{name}] = 1", "quoted identifier"),
    ("_id = 1 -- {name}", "comment"),
    ("_id = 1 /* {name} */", "comment"),
    ("display_name = '{name}", "never closed"),
    ("display_name = '{name!r}'", "parameter name"),
    ("display_name = '{name.upper}'", "parameter name"),
    ("display_name = '{nope}'", "no parameter 'nope'"),
])
def test_tasks_check_refuses_a_where_a_parameter_could_break_out_of(tmp_path, where, message):
    body = f"""\
tasks:
  - id: t.one
    goal: "Find {{name}}"
    params: {{name: "Ada", n: 3}}
    domain: contacts
    checks:
      - name: found
        content:
          uri: "content://com.android.contacts/contacts"
          where: {_yaml_string(where)}
"""
    path = _write(tmp_path, body)
    with pytest.raises(TaskSpecError) as info:
        load_suite(path)
    assert info.value.field == "tasks.0.checks.0.content.where"
    assert info.value.line == 10
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}:10: tasks.0.checks.0.content.where: ")


def test_a_bad_value_in_a_variant_or_random_choice_names_the_setup_field(tmp_path):
    body = """\
tasks:
  - id: t.one
    goal: "Delete the {hour} o'clock alarm"
    params: {hour: 7}
    variants:
      - {hour: 8}
      - {hour: "8 OR 1=1"}
    domain: clock
    setup:
      - content_delete: {uri: "content://com.android.deskclock/alarms", where: "hour = {hour}"}
    checks:
      - content: {uri: "content://com.android.deskclock/alarms", min: 0, max: 0}
"""
    with pytest.raises(TaskSpecError) as info:
        load_suite(_write(tmp_path, body))
    assert info.value.field == "tasks.0.setup.0.content_delete.where" and info.value.line == 10
    assert "'8 OR 1=1' is not a number" in info.value.message and "variant 2" in info.value.message
    random = body.replace("    variants:\n      - {hour: 8}\n      - {hour: \"8 OR 1=1\"}\n",
                          "    random: {hour: {choice: [6, \"7; DROP TABLE alarms\"]}}\n")
    with pytest.raises(TaskSpecError) as info:
        load_suite(_write(tmp_path, random))
    assert "random hour = '7; DROP TABLE alarms'" in info.value.message


@pytest.mark.parametrize("template, values, sql", [
    ("store = '{store}' AND items = '1x {dish}'", {"store": "Luigi's", "dish": "Pad \"Thai\""},
     "store = 'Luigi''s' AND items = '1x Pad \"Thai\"'"),
    ("store = 'Luigi''s {x}'", {"x": "it's"}, "store = 'Luigi''s it''s'"),
    ("amount=-{amount} AND n = {n}", {"amount": -5, "n": 2.5}, "amount=-(-5) AND n = 2.5"),
    ("enabled = {on} AND minutes = {m:02d}", {"on": True, "m": 5}, "enabled = 1 AND minutes = 05"),
    ("title LIKE '%unch%' AND place = '{p}'", {"p": "100%"}, "title LIKE '%unch%' AND place = '100%'"),
    ("(title LIKE '%a%') OR (x IN ('{a}', '{b}'))", {"a": "'", "b": ""}, "(title LIKE '%a%') OR (x IN ('''', ''))"),
    ("note = '{{not a placeholder}}'", {}, "note = '{not a placeholder}'"),
])
def test_rendering_writes_values_as_sql_literals(template, values, sql):
    assert parse_where(template).render(values) == sql


def test_a_number_place_refuses_text_and_non_finite_numbers():
    template = parse_where("hour = {h}")
    for bad in ("7", "7 OR 1=1", None, float("nan"), float("inf")):
        with pytest.raises(WhereError):
            template.render({"h": bad})


@pytest.mark.parametrize("value", HOSTILE[:5])
def test_a_hostile_parameter_in_a_setting_or_a_file_arrives_as_data(tmp_path, device, value):
    body = f"""\
tasks:
  - id: hostile.seed
    goal: "Keep {{v}}"
    params: {{v: {_yaml_string(value)}, f: "a; rm -f keep.txt $(id)"}}
    domain: files
    setup:
      - settings_put: {{namespace: system, key: ringtone_title, value: "{{v}}"}}
      - file_push: {{path: "/sdcard/Documents/{{f}}.txt", content: "{{v}}"}}
    checks:
      - setting: {{namespace: system, key: ringtone_title, equals: "{{v}}"}}
      - file: {{path: "/sdcard/Documents/{{f}}.txt", contains: "{{v}}"}}
"""
    device.push(b"still here", "/sdcard/keep.txt")
    task = load_suite(_write(tmp_path, body)).tasks[0]
    seed(task, device)
    assert device.shell(["settings", "get", "system", "ringtone_title"]).output.rstrip("\n") == value
    assert device.shell(["cat", "/sdcard/Documents/a; rm -f keep.txt $(id).txt"]).output == value
    assert device.shell(["cat", "/sdcard/keep.txt"]).output == "still here"
    assert verify(task, device, _traj()).success
