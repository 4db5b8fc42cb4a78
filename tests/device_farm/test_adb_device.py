"""AdbDevice and the Android operations, against the virtual phone through the real adb server."""

from __future__ import annotations

import socket
import time

import pytest

from device_farm.adb.device import AdbDevice, list_serials
from device_farm.adb.server import AdbServer
from device_farm.android import Intent, content_insert, content_query, foreground, launch_app, start_activity
from device_farm.errors import AppNotInstalled, CommandTooLong, DeviceOffline, ElementNotFound
from device_farm.adb.u2rpc import ui_selector
from device_farm.virtual import VirtualPhone

CLOCK = "com.google.android.deskclock"
ALARMS = "content://com.android.deskclock/alarms"


@pytest.fixture
def device(virtual_phone):
    with AdbDevice(virtual_phone.serial, adb_host=virtual_phone.adb.host, adb_port=virtual_phone.adb.port) as dev:
        yield dev


def test_info_and_shell(device):
    info = device.info()
    assert info.width == 1080 and info.height == 2400 and info.sdk >= 30
    res = device.shell(["echo", "it's a \"quoted\" $HOME"])
    assert res.ok and res.output.strip() == "it's a \"quoted\" $HOME"
    assert device.shell("no_such_command").exit_code == 127


def _text(size: int) -> str:
    line = "it's \"quoted\" $HOME `x` # not a comment; émoji 🎉\n"
    return (line * (size // len(line) + 1))[:size]


def test_commands_past_the_adb_request_limit_run_whole(device):
    # 70 KiB is past the 65535 bytes a host request can announce; 10 x 96 KB is ~1 MiB.
    text = _text(70 * 1024)
    res = device.shell(["echo", text])
    assert res.ok and res.output == text + "\n"
    parts = ["a few words " * 8_000] * 10
    res = device.shell(["echo", *parts])
    assert res.ok and res.output == " ".join(parts) + "\n"
    assert device.shell(["sh_no_such", text]).exit_code == 127  # the exit status still comes back
    content_insert(device, ALARMS, {"hour": 7, "minutes": 0, "label": text.replace("\n", " ")})
    rows = content_query(device, ALARMS, projection=["label"], where="hour=7 AND minutes=0")
    assert rows[-1]["label"] == text.replace("\n", " ")
    assert device.shell("echo ok").output == "ok\n"


@pytest.mark.parametrize("command", [
    ["echo", "x" * (1024 * 1024)],  # one argument of 1 MiB: past the kernel's 128 KiB
    ["echo", *["y" * 100_000] * 11],  # 1.1 MiB in all
    "echo " + "z" * (1024 * 1024 + 1),
], ids=["1MiB-argument", "1.1MiB-command", "1MiB-string"])
def test_a_command_longer_than_a_phone_takes_is_the_callers_error(virtual_phone, device, command):
    with pytest.raises(CommandTooLong, match=r"KiB.*at most|limit") as caught:
        device.shell(command)
    assert not caught.value.infra and caught.value.code == "invalid_arguments"
    assert device.shell("echo ok").output == "ok\n"  # the same device, the same connection setup
    assert virtual_phone.serial in list_serials(virtual_phone.adb.host, virtual_phone.adb.port)


def test_observe_launch_tap_back_home(device):
    launch_app(device, CLOCK)
    assert foreground(device)[0] == CLOCK
    screen = device.observe()
    assert screen.package == CLOCK
    fab = next(e for e in screen.elements if e.resource_id.endswith("id/fab"))
    device.click(*fab.bounds.center)
    assert device.observe().digest != screen.digest  # the add-alarm dialog opened
    device.press("back")
    assert device.observe().digest == screen.digest  # ids stable while the screen is unchanged
    device.press("home")
    assert foreground(device)[0] != CLOCK


def test_intent_with_typed_extras_and_content_query(device):
    start_activity(
        device,
        Intent(
            action="android.intent.action.SET_ALARM",
            extras={
                "android.intent.extra.alarm.HOUR": 6,
                "android.intent.extra.alarm.MINUTES": 5,
                "android.intent.extra.alarm.MESSAGE": "Wake, up; now & 'then'",
                "android.intent.extra.alarm.SKIP_UI": True,
            },
        ),
    )
    rows = content_query(device, ALARMS, where="hour=6 AND minutes=5")
    assert len(rows) == 1 and rows[0]["label"] == "Wake, up; now & 'then'" and rows[0]["enabled"] == "1"


def test_content_insert_then_query_with_projection(device):
    content_insert(device, ALARMS, {"hour": 9, "minutes": 0, "enabled": 0, "label": "x"})
    rows = content_query(device, ALARMS, projection=["hour", "enabled"])
    assert rows == [{"hour": "9", "enabled": "0"}]


def test_missing_app_and_missing_element(device):
    with pytest.raises(AppNotInstalled):
        launch_app(device, "com.example.nothere")
    with pytest.raises(ElementNotFound):
        device.rpc.call("getText", ui_selector(text="No such thing"))


def test_set_text_reaches_the_field_exactly(device):
    device.shell(["am", "start", "-a", "android.intent.action.INSERT", "-t", "vnd.android.cursor.dir/contact"])
    field = next(e for e in device.observe().elements if e.editable)
    text = "a;b && c | $(id) `x` \"q\" 'q' \\ 中文 🙂"
    device.set_text(ui_selector(resourceId=field.resource_id), text)
    assert device.observe().element(field.id).text == text


def test_dropped_phone_raises_device_offline_quickly(virtual_phone, device):
    virtual_phone.phone.stop()
    started = time.monotonic()
    with pytest.raises(DeviceOffline):
        device.shell("echo hi", timeout=5)
    assert time.monotonic() - started < 2.0


def _free_emulator_port() -> int:
    for port in range(5555, 5586, 2):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    pytest.skip("no free port in 5555-5585")


def test_phone_on_5555_to_5585_is_attached_without_adb_connect():
    port = _free_emulator_port()
    with VirtualPhone(port=port), AdbServer() as server:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and f"emulator-{port - 1}" not in list_serials(server.host, server.port):
            time.sleep(0.1)
        assert f"emulator-{port - 1}" in list_serials(server.host, server.port)
        with AdbDevice(f"emulator-{port - 1}", adb_port=server.port) as dev:
            assert dev.shell("echo hi").output.strip() == "hi"


def test_push_writes_bytes_or_a_local_file_with_the_mode_asked(device, tmp_path):
    script = b"echo pushed\n"
    device.push(script, remote="/data/local/tmp/tools/run.sh", mode=0o755)  # the folder is created
    assert device.shell(["cat", "/data/local/tmp/tools/run.sh"]).output == "echo pushed\n"
    assert device.shell(["ls", "-l", "/data/local/tmp/tools/run.sh"]).output.startswith("-rwxr-xr-x")
    local = tmp_path / "notes.txt"
    local.write_bytes("from a file, ünïcode\n".encode())
    device.push(local, "/sdcard/Download/notes.txt")
    device.push(str(local), "/sdcard/Download/again.txt")
    assert device.shell(["cat", "/sdcard/Download/notes.txt"]).output == "from a file, ünïcode\n"
    assert device.shell(["cat", "/sdcard/Download/again.txt"]).output == "from a file, ünïcode\n"
    assert device.shell(["ls", "-l", "/sdcard/Download/notes.txt"]).output.startswith("-rw-r--r--")


def test_pushing_a_missing_local_file_is_the_callers_error_and_asks_the_phone_nothing(device, tmp_path):
    with pytest.raises(FileNotFoundError):
        device.push(tmp_path / "absent.txt", "/sdcard/Download/absent.txt")
    assert device.shell(["ls", "/sdcard/Download/absent.txt"]).exit_code != 0
