"""Personal apps on the virtual phone (Settings, Keep Notes, Files, Maps, YouTube Music),
driven only through adb: `am start` intents, `content`/`settings`/`dumpsys` and files, and
the UI through uiautomator2."""

from __future__ import annotations

import uiautomator2 as u2

SETTINGS = "com.android.settings"


def _texts(d: u2.Device) -> list[str]:
    return [e.get_text() for e in d(resourceId="android:id/title")]


def test_settings_switch_and_settings_get_agree(virtual_phone):
    adb = virtual_phone.device
    assert adb.shell2("am start -a android.settings.WIFI_SETTINGS").returncode == 0
    d = u2.connect(adb)
    assert d.app_current()["package"] == SETTINGS
    wifi = d(text="Wi-Fi").right(className="android.widget.Switch")
    assert wifi.info["checked"] is True
    wifi.click()
    assert adb.shell("settings get global wifi_on") == "0"
    assert d(text="Wi-Fi").right(className="android.widget.Switch").info["checked"] is False
    adb.shell("svc wifi enable")  # what the shell writes, the page shows
    assert d(text="Wi-Fi").right(className="android.widget.Switch").info["checked"] is True
    adb.shell("am start -a android.settings.ZEN_MODE_SETTINGS")
    d(text="Do Not Disturb", resourceId="android:id/title").click()
    assert adb.shell("settings get global zen_mode") == "1"
    assert d(text="On / Until you turn off").exists


def test_settings_homepage_scrolls_and_opens_pages(virtual_phone):
    d = u2.connect(virtual_phone.device)
    d.app_start(SETTINGS)
    assert d(resourceId=f"{SETTINGS}:id/recycler_view").info["scrollable"] is True
    assert "Location" not in _texts(d)
    d.swipe(540, 2100, 540, 900)
    assert "Location" in _texts(d) and "Network & internet" not in _texts(d)
    d(text="Location").click()
    assert d(text="Use location").exists
    d(text="Use location").click()
    assert d.shell("settings get secure location_mode").output.strip() == "0"
    d.press("back")
    assert d(text="Security & privacy").exists


def test_app_info_lists_pm_grant_state(virtual_phone):
    adb = virtual_phone.device
    adb.shell("pm grant com.google.android.deskclock android.permission.POST_NOTIFICATIONS")
    adb.shell("am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.google.android.deskclock")
    d = u2.connect(adb)
    assert d(resourceId=f"{SETTINGS}:id/collapsing_toolbar").get_text() == "Clock"
    assert d(text="Notifications").sibling(resourceId="android:id/summary").get_text() == "Allowed"
    d(text="Camera").click()
    assert "android.permission.CAMERA: granted=true" in adb.shell("dumpsys package com.google.android.deskclock")
