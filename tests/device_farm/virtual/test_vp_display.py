"""`wm size` and `wm density` on the virtual phone: Android's output and errors, and an
override that the clients see (adbutils' window_size, uiautomator2's info, the hierarchy
bounds, the screenshot size), undone by `reset`, a factory reset or a snapshot restore."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import uiautomator2 as u2

BOUNDS = re.compile(r"\[(\d+),(\d+)\]\[(\d+),(\d+)\]")


def test_wm_size_override_and_reset_in_androids_format(virtual_phone):
    d = virtual_phone.device
    assert d.shell("wm size") == "Physical size: 1080x2400"
    result = d.shell2("wm size 720x1600")
    assert (result.returncode, result.output) == (0, "")
    assert d.shell("wm size") == "Physical size: 1080x2400\nOverride size: 720x1600"
    assert d.window_size() == (720, 1600)
    assert d.shell2("wm size reset").output == ""
    assert d.shell("wm size") == "Physical size: 1080x2400"
    assert d.window_size() == (1080, 2400)


def test_wm_size_in_dp_and_clamped(virtual_phone):
    d = virtual_phone.device
    d.shell("wm size 360dpx800dp")  # 420 dpi: 2.625 px a dp
    assert d.shell("wm size").splitlines()[-1] == "Override size: 945x2100"
    d.shell("wm size 10x99999")
    assert d.shell("wm size").splitlines()[-1] == "Override size: 200x4800"


def test_wm_bad_arguments_answer_like_android(virtual_phone):
    d = virtual_phone.device
    for args, text in (("size 1080", "Error: bad size 1080"), ("size x100", "Error: bad size x100"),
                       ("size axb", 'Error: bad number java.lang.NumberFormatException: For input string: "a"'),
                       ("density 50", "Error: density must be >= 72"),
                       ("density big", 'Error: bad number java.lang.NumberFormatException: For input string: "big"')):
        result = d.shell2(f"wm {args}")
        assert result.returncode == 255 and result.output.strip() == text, args
    assert d.shell("wm size") == "Physical size: 1080x2400"
    assert d.shell("wm density") == "Physical density: 420"
    assert d.shell2("wm rotate").output.strip() == "Unknown command: rotate"


def test_wm_density_override_and_reset(virtual_phone):
    d = virtual_phone.device
    assert d.shell("wm density") == "Physical density: 420"
    d.shell("wm density 320")
    assert d.shell("wm density") == "Physical density: 420\nOverride density: 320"
    assert d.shell("cmd window density -d 0").splitlines()[-1] == "Override density: 320"
    d.shell("wm density reset")
    assert d.shell("wm density") == "Physical density: 420"


def test_override_changes_what_uiautomator2_the_hierarchy_and_screenshots_show(virtual_phone):
    dev = virtual_phone.device
    d = u2.connect(dev)
    dev.shell("wm size 720x1600; wm density 280")
    info = d.info
    assert (info["displayWidth"], info["displayHeight"]) == (720, 1600)
    assert (info["displaySizeDpX"], info["displaySizeDpY"]) == (411, 914)
    root = ET.fromstring(d.dump_hierarchy())
    right = max(int(BOUNDS.match(n.get("bounds", "")).group(3)) for n in root.iter("node"))
    bottom = max(int(BOUNDS.match(n.get("bounds", "")).group(4)) for n in root.iter("node"))
    assert (right, bottom) == (720, 1600)
    assert dev.screenshot().size == (720, 1600)
    assert d.screenshot().size == (720, 1600)
    # apps lay out in the smaller screen and still take taps there: add an alarm, switch it off
    d.app_start("com.google.android.deskclock")
    fab = d(description="Add alarm")
    assert fab.center()[0] == 360
    fab.click()
    assert d(text="Set alarm time").exists
    d(resourceId="android:id/input_hour").set_text("6")
    d(resourceId="android:id/input_minute").set_text("45")
    d(resourceId="android:id/button1").click()
    assert d(resourceId="com.google.android.deskclock:id/digital_clock").get_text() == "6:45 AM"
    switch = d(resourceId="com.google.android.deskclock:id/onoff")
    assert switch.info["checked"]  # a new alarm is on
    switch.click()
    assert not switch.info["checked"]
    dev.shell("wm size reset")
    assert dev.screenshot().size == (1080, 2400)


def test_factory_reset_and_snapshots_carry_the_override(virtual_phone):
    d, phone = virtual_phone.device, virtual_phone.phone
    d.shell("wm size 720x1600")
    phone.save_snapshot("small")
    d.shell("wm size reset")
    phone.restore_snapshot("small")
    assert d.window_size() == (720, 1600)
    phone.reset()
    assert d.window_size() == (1080, 2400)
