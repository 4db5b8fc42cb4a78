"""Device-level shell commands in Android's own formats, through adbutils: settings,
svc, dumpsys battery, input swipe, wm size and the properties adbutils' `d.prop` reads."""

from __future__ import annotations

CLOCK = "com.google.android.deskclock"


def test_settings_get_put_list_delete_in_each_namespace(virtual_phone):
    d = virtual_phone.device
    for ns in ("system", "secure", "global"):
        assert d.shell(f"settings get {ns} my_key") == "null"
        assert d.shell2(f"settings put {ns} my_key 42").output == ""
        assert d.shell(f"settings get {ns} my_key") == "42"
        assert "my_key=42" in d.shell(f"settings list {ns}").splitlines()
        assert d.shell(f"settings delete {ns} my_key") == "Deleted 1 rows"
        assert d.shell(f"settings get {ns} my_key") == "null"
    assert d.shell2("settings get nowhere x").returncode != 0


def test_svc_wifi_and_data_show_in_settings_and_on_screen(virtual_phone):
    d = virtual_phone.device
    with_wifi = d.screenshot()
    assert d.shell2("svc wifi disable").returncode == 0
    assert d.shell("settings get global wifi_on") == "0"
    assert d.shell("dumpsys wifi") == "Wi-Fi is disabled"
    assert d.screenshot().crop((0, 0, 1080, 132)).tobytes() != with_wifi.crop((0, 0, 1080, 132)).tobytes()
    d.shell("svc wifi enable")
    assert d.shell("settings get global wifi_on") == "1"
    d.shell("svc data disable")
    assert d.shell("settings get global mobile_data") == "0"
    assert d.shell2("svc wifi sideways").returncode != 0


def test_dumpsys_battery_level_and_reset(virtual_phone):
    d = virtual_phone.device
    out = d.shell("dumpsys battery")
    assert out.startswith("Current Battery Service state:")
    assert "  level: 100" in out.splitlines() and "  scale: 100" in out.splitlines()
    d.shell("dumpsys battery set level 15")
    assert "  level: 15" in d.shell("dumpsys battery").splitlines()
    d.shell("dumpsys battery reset")
    assert "  level: 100" in d.shell("dumpsys battery").splitlines()


def test_input_swipe_tap_long_press_and_home_gesture(virtual_phone):
    d = virtual_phone.device
    d.shell("am start -a android.intent.action.SHOW_ALARMS")
    assert d.app_current().package == CLOCK
    assert d.shell2("input swipe 540 1200 540 400 300").returncode == 0  # a scroll: stays
    assert d.app_current().package == CLOCK
    d.shell("input swipe 540 2380 540 1600 200")  # up from the navigation handle
    assert d.app_current().package != CLOCK
    assert d.shell2("input swipe 1 2").returncode != 0
    # a zero-length quick swipe on the Clock icon is a tap; a long one is a long press
    icon = next(line for line in d.dump_hierarchy().split("<node") if 'text="Clock"' in line)
    left, top, right, bottom = (int(v) for v in icon.split('bounds="[')[1].split('"')[0]
                                .replace("][", ",").rstrip("]").split(","))
    x, y = (left + right) // 2, (top + bottom) // 2
    d.shell(f"input swipe {x} {y} {x} {y} 800")
    assert d.app_current().package != CLOCK
    d.shell(f"input swipe {x} {y} {x} {y} 50")
    assert d.app_current().package == CLOCK


def test_wm_size_and_adbutils_props(virtual_phone):
    d = virtual_phone.device
    assert d.shell("wm size") == "Physical size: 1080x2400"
    assert d.window_size() == (1080, 2400)
    assert (d.prop.model, d.prop.name, d.prop.device) == ("Pixel 7", "panther", "panther")
    assert d.getprop("ro.product.brand") == "google"
