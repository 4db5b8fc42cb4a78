"""Android operations over a Device, checked through the real adb server on the virtual phone,
including property tests: any text travels exactly, never interpreted by the device's shell."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from device_farm.adb.device import AdbDevice
from device_farm.android import (
    Intent,
    clear_app,
    content_insert,
    content_query,
    force_stop,
    get_setting,
    package_path,
    put_setting,
    start_activity,
)
from device_farm.errors import AppNotInstalled
from device_farm.adb.u2rpc import ui_selector

CLOCK = "com.google.android.deskclock"
ALARMS = "content://com.android.deskclock/alarms"
# Quotes, shell metacharacters, spaces, emoji and every script travel exactly. Control characters
# are left out: `content query` prints rows as lines and uiautomator's dump replaces them, on a
# real phone as here, so they cannot be read back.
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def device(virtual_phone):
    with AdbDevice(virtual_phone.serial, adb_host=virtual_phone.adb.host, adb_port=virtual_phone.adb.port) as dev:
        yield dev


def test_settings_round_trip(device):
    assert get_setting(device, "system", "no_such_key") is None
    put_setting(device, "global", "airplane_mode_on", True)
    assert get_setting(device, "global", "airplane_mode_on") == "1"
    put_setting(device, "system", "screen_brightness", 87)
    assert get_setting(device, "system", "screen_brightness") == "87"


def test_control_characters_in_a_dump_do_not_break_parsing():
    from device_farm.hierarchy import parse_hierarchy

    xml = '<hierarchy><node text="a\x1fb&#x1;" class="android.widget.TextView" bounds="[0,0][10,10]"/></hierarchy>'
    assert parse_hierarchy(xml).elements[0].text == "a\ufffdb\ufffd"


def test_packages_and_clearing(device):
    assert package_path(device, CLOCK).endswith(".apk")
    with pytest.raises(AppNotInstalled):
        package_path(device, "com.example.absent")
    start_activity(device, Intent(action="android.intent.action.SET_ALARM", extras={
        "android.intent.extra.alarm.HOUR": 5, "android.intent.extra.alarm.MINUTES": 0,
        "android.intent.extra.alarm.SKIP_UI": True}))
    assert content_query(device, ALARMS)
    force_stop(device, CLOCK)
    clear_app(device, CLOCK)
    assert content_query(device, ALARMS) == []
    with pytest.raises(AppNotInstalled):
        clear_app(device, "com.example.absent")


@SETTINGS
@given(label=TEXT)
def test_any_intent_extra_arrives_exactly(device, label):
    device.shell(["content", "delete", "--uri", ALARMS])
    start_activity(device, Intent(action="android.intent.action.SET_ALARM", extras={
        "android.intent.extra.alarm.HOUR": 6, "android.intent.extra.alarm.MINUTES": 1,
        "android.intent.extra.alarm.MESSAGE": label, "android.intent.extra.alarm.SKIP_UI": True}))
    rows = content_query(device, ALARMS)
    assert len(rows) == 1
    # `content query` prints rows as text: an empty label and a NULL look alike there
    assert (rows[0]["label"] or "") == label


@SETTINGS
@given(text=TEXT)
def test_any_typed_text_arrives_exactly(device, text):
    device.shell(["am", "start", "-a", "android.intent.action.INSERT", "-t", "vnd.android.cursor.dir/contact"])
    field = next(e for e in device.observe().elements if e.editable)
    device.set_text(ui_selector(resourceId=field.resource_id), text)
    shown = device.observe().element(field.id).text
    assert shown == text or (text == "" and shown == field.text)  # an empty field shows its hint
    assert device.shell("echo still-alive").output.strip() == "still-alive"


def test_a_dump_with_control_characters_in_a_field_still_parses(device):
    device.shell(["am", "start", "-a", "android.intent.action.INSERT", "-t", "vnd.android.cursor.dir/contact"])
    field = next(e for e in device.observe().elements if e.editable)
    device.set_text(ui_selector(resourceId=field.resource_id), "a\x1fb\x07")
    assert device.observe().element(field.id).text == "a?b?"


NOTES = "content://com.google.android.keep/notes"
# what breaks a line-by-line reading of `content query`: newlines, ", name=" and lines that look like rows
VALUE = st.lists(st.one_of(st.characters(blacklist_categories=("Cs", "Cc")),
                           st.sampled_from(["\n", ", ", "=", ", text=", ", title=", "Row: 1 _id=", "Row: 2 _id=", "NULL"])),
                 max_size=12).map("".join)


@SETTINGS
@given(text=VALUE)
def test_any_text_in_a_projections_last_column_reads_back_exactly(device, text):
    device.shell(["content", "delete", "--uri", NOTES])
    content_insert(device, NOTES, {"title": "first", "text": "plain"})
    content_insert(device, NOTES, {"title": "second", "text": text})
    rows = content_query(device, NOTES, projection=["_id", "title", "text"], sort="_id")
    assert [(r["title"], r["text"]) for r in rows] == [("first", "plain"), ("second", None if text == "NULL" else text)]
