"""uiautomator2 3.7.1, unmodified, against the virtual phone: start-up (jar md5, push,
ping, or app_process launch), device info, hierarchy, selectors, clicks, keys, shell."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import adbutils
import pytest
import uiautomator2 as u2

CLOCK = "com.google.android.deskclock"
LAUNCHER = "com.google.android.apps.nexuslauncher"


@pytest.fixture
def d(virtual_phone) -> u2.Device:
    return u2.connect(virtual_phone.device)


def test_connect_by_serial_through_the_default_client(virtual_phone, monkeypatch):
    # uiautomator2 resolves a serial with adbutils' module-level client; point it at our server.
    monkeypatch.setattr(adbutils, "adb", adbutils.AdbClient(virtual_phone.adb.host, virtual_phone.adb.port))
    d = u2.connect(virtual_phone.serial)
    assert d.shell("echo hi").output == "hi\n"
    # the client pushed its jar; the phone reports the same md5 uiautomator2 computed
    assert d.shell("toybox md5sum /data/local/tmp/u2.jar").exit_code == 0


def test_info_and_hierarchy(d):
    info = d.info
    assert info["currentPackageName"] == LAUNCHER
    assert (info["displayWidth"], info["displayHeight"], info["sdkInt"]) == (1080, 2400, 34)
    root = ET.fromstring(d.dump_hierarchy().encode())
    assert root.tag == "hierarchy"
    labels = {n.get("text") for n in root.iter("node")}
    assert {"Clock", "Contacts"} <= labels


def test_open_clock_from_home_then_back(d):
    d(text="Clock").click()
    assert d.app_current()["package"] == CLOCK
    assert d(resourceId=f"{CLOCK}:id/fab").exists
    assert d(description="Add alarm").info["className"] == "android.widget.ImageButton"
    d.press("back")
    assert d.app_current()["package"] == LAUNCHER
    assert not d(resourceId=f"{CLOCK}:id/fab").exists


def test_app_start_and_home(d):
    d.app_start(CLOCK)
    current = d.app_current()
    assert (current["package"], current["activity"]) == (CLOCK, "com.android.deskclock.DeskClock")
    # the pid is the app's process, the one `pidof` and `ps -A` show
    assert current["pid"] == int(d.shell(["pidof", CLOCK]).output) > 0
    assert f" {current['pid']} " in next(line for line in d.shell("ps -A").output.splitlines() if CLOCK in line)
    assert d(text="No alarms").exists
    d.press("home")
    assert d.app_current()["package"] == LAUNCHER


def test_missing_view_raises_ui_object_not_found(d):
    with pytest.raises(u2.UiObjectNotFoundError):
        d(text="Nope").get_text(timeout=0.1)
    assert d(text="Nope").count == 0
    assert d(className="android.widget.TextView").count >= 2


def test_shell_through_uiautomator2(d):
    assert d.shell("echo hi").output == "hi\n"
    assert d.shell("nosuchcmd").exit_code == 127


def test_fresh_phone_server_is_launched_with_app_process(phone_factory):
    handle = phone_factory(uiautomator_running=False)
    sock_refused = pytest.raises(adbutils.AdbError)
    with sock_refused:
        handle.device.create_connection(adbutils.Network.TCP, 9008)
    d = u2.connect(handle.device)  # md5 check, jar push, ping fails, app_process, ping
    assert d.info["sdkInt"] == 34
    d.stop_uiautomator(wait=True)  # closing the app_process stream stops the server
    with pytest.raises(adbutils.AdbError):
        handle.device.create_connection(adbutils.Network.TCP, 9008)
