"""Apps on the virtual phone, verified only through adb: intents with `am start`, the
providers with `content`, and the UI with uiautomator2."""

from __future__ import annotations

import uiautomator2 as u2

CLOCK = "com.google.android.deskclock"
CONTACTS = "com.google.android.contacts"
ALARMS = "content://com.android.deskclock/alarms"
SET_ALARM = ("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR {h} "
             "--ei android.intent.extra.alarm.MINUTES {m}")


def test_set_alarm_intent_creates_an_enabled_alarm(virtual_phone):
    d = virtual_phone.device
    out = d.shell2(SET_ALARM.format(h=7, m=30) + " --es android.intent.extra.alarm.MESSAGE 'Wake up'")
    assert out.returncode == 0
    assert out.output.startswith("Starting: Intent { act=android.intent.action.SET_ALARM (has extras) }")
    rows = d.shell(f"content query --uri {ALARMS} --projection _id:hour:minutes:enabled:label")
    assert rows == "Row: 0 _id=1, hour=7, minutes=30, enabled=1, label=Wake up"
    assert "mCurrentFocus=Window{" in d.shell("dumpsys window")
    assert d.app_current().package == CLOCK


def test_skip_ui_leaves_the_foreground_alone(virtual_phone):
    d = virtual_phone.device
    d.shell(SET_ALARM.format(h=6, m=5) + " --ez android.intent.extra.alarm.SKIP_UI true")
    assert d.app_current().package != CLOCK
    assert "hour=6, minutes=5" in d.shell(f"content query --uri {ALARMS}")


def test_content_where_sort_insert_delete(virtual_phone):
    d = virtual_phone.device
    assert d.shell(f"content query --uri {ALARMS}") == "No result found."
    for h, m in ((9, 0), (7, 30), (22, 15)):
        assert d.shell2(f"content insert --uri {ALARMS} --bind hour:i:{h} --bind minutes:i:{m} "
                        "--bind enabled:b:true --bind label:s:'Gym day'").returncode == 0
    assert d.shell(f"content query --uri {ALARMS} --projection hour:minutes --where 'hour=7 AND minutes=30'") \
        == "Row: 0 hour=7, minutes=30"
    assert d.shell(f"content query --uri {ALARMS} --projection hour --sort 'hour DESC'").splitlines() == [
        "Row: 0 hour=22", "Row: 1 hour=9", "Row: 2 hour=7"]
    assert d.shell(f"content query --uri {ALARMS} --projection label --where \"label='Gym day'\"").count("Row:") == 3
    d.shell(f"content delete --uri {ALARMS} --where 'hour>8'")
    assert d.shell(f"content query --uri {ALARMS} --projection hour") == "Row: 0 hour=7"
    bad = d.shell2(f"content query --uri {ALARMS} --where 'nosuch=1'")
    assert bad.returncode == 1 and "no such column: nosuch" in bad.output


def test_null_values_print_as_NULL(virtual_phone):
    d = virtual_phone.device
    d.shell("content insert --uri content://com.android.contacts/raw_contacts --bind display_name:n:")
    assert d.shell("content query --uri content://com.android.contacts/contacts --projection display_name") \
        == "Row: 0 display_name=NULL"


def test_alarm_switch_tap_toggles_enabled(virtual_phone):
    adb_dev = virtual_phone.device
    adb_dev.shell(SET_ALARM.format(h=7, m=30))
    d = u2.connect(adb_dev)
    switch = d(resourceId=f"{CLOCK}:id/onoff")
    assert switch.info["checked"] is True
    x, y = switch.center()
    d.click(x, y)
    assert "enabled=0" in adb_dev.shell(f"content query --uri {ALARMS} --projection enabled")
    assert switch.info["checked"] is False
    d.click(x, y)
    assert "enabled=1" in adb_dev.shell(f"content query --uri {ALARMS} --projection enabled")


def test_add_alarm_through_the_time_picker(virtual_phone):
    d = u2.connect(virtual_phone.device)
    d.app_start(CLOCK)
    d(description="Add alarm").click()
    d(resourceId="android:id/input_hour").set_text("6")
    d(resourceId="android:id/input_minute").set_text("45")
    d(text="OK").click()
    assert d(text="6:45 AM").exists
    assert "hour=6, minutes=45, enabled=1" in d.shell(f"content query --uri {ALARMS}").output


def test_contact_insert_intent_settext_save(virtual_phone):
    adb_dev = virtual_phone.device
    adb_dev.shell("am start -a android.intent.action.INSERT -t vnd.android.cursor.dir/contact "
                  "--es name 'Ada Lovelace'")
    d = u2.connect(adb_dev)
    assert d.app_current()["activity"] == "com.android.contacts.activities.ContactEditorActivity"
    name = d(resourceId=f"{CONTACTS}:id/editor_name")
    assert name.info["className"] == "android.widget.EditText" and name.get_text() == "Ada Lovelace"
    d(resourceId=f"{CONTACTS}:id/editor_phone").set_text("+1 555 0100")
    # nothing is stored before Save
    assert adb_dev.shell("content query --uri content://com.android.contacts/contacts") == "No result found."
    d(text="Save").click()
    assert adb_dev.shell("content query --uri content://com.android.contacts/data/phones "
                         "--projection display_name:data1") == "Row: 0 display_name=Ada Lovelace, data1=+1 555 0100"
    assert "has_phone_number=1" in adb_dev.shell("content query --uri content://com.android.contacts/contacts")


def test_create_contact_from_the_list_with_typed_text(virtual_phone):
    d = u2.connect(virtual_phone.device)
    d.app_start(CONTACTS)
    d(description="Create contact").click()
    d(resourceId=f"{CONTACTS}:id/editor_name").click()
    d.shell("input text Grace%sHopper")
    d(text="Save").click()
    assert d.app_current()["activity"] == "com.android.contacts.activities.PeopleActivity"
    assert d(text="Grace Hopper").exists
    assert "display_name=Grace Hopper" in d.shell("content query --uri content://com.android.contacts/contacts").output


def test_raw_contacts_insert_is_visible_in_phones(virtual_phone):
    d = virtual_phone.device
    d.shell("content insert --uri content://com.android.contacts/raw_contacts "
            "--bind display_name:s:Alan --bind phone:s:555-0199")
    assert d.shell("content query --uri content://com.android.contacts/data/phones --projection data1 "
                   "--where \"display_name='Alan'\"") == "Row: 0 data1=555-0199"


def test_packages_and_launch(virtual_phone):
    d = virtual_phone.device
    packages = d.shell("pm list packages").splitlines()
    assert f"package:{CLOCK}" in packages and f"package:{CONTACTS}" in packages
    assert d.shell2("pm path com.example.none").returncode == 1
    assert "Events injected: 1" in d.shell(f"monkey -p {CONTACTS} -c android.intent.category.LAUNCHER 1")
    assert d.app_current().activity == "com.android.contacts.activities.PeopleActivity"
    d.shell("input keyevent KEYCODE_BACK")
    assert d.app_current().package == "com.google.android.apps.nexuslauncher"
    bad = d.shell2("am start -n com.example/.Main")
    assert bad.returncode != 0 and "does not exist" in bad.output


def test_uiautomator_dump_to_file(virtual_phone):
    d = virtual_phone.device
    assert d.shell("uiautomator dump") == "UI hierchary dumped to: /sdcard/window_dump.xml"
    assert d.sync.read_text("/sdcard/window_dump.xml").startswith("<?xml version='1.0'")


def test_reset_restores_factory_state(virtual_phone):
    d = virtual_phone.device
    d.shell(SET_ALARM.format(h=7, m=0))
    d.sync.push(b"x", "/sdcard/x.txt")
    virtual_phone.phone.reset()
    assert d.shell(f"content query --uri {ALARMS}") == "No result found."
    assert not d.sync.exists("/sdcard/x.txt")
    assert d.app_current().package == "com.google.android.apps.nexuslauncher"
