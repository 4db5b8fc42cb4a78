"""AppiumDevice against a real Appium 3 server running the fake driver."""

from __future__ import annotations

import base64
import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from device_farm import Device
from device_farm.appium.device import AppiumDevice, DriverUnsupported
from device_farm.errors import CommandTooLong, DeviceOffline, DeviceTimeout, ElementNotFound, UiRpcError
from device_farm.adb.u2rpc import ui_selector


def test_is_a_device_and_reports_the_screen_size(appium_device: AppiumDevice) -> None:
    assert isinstance(appium_device, Device)
    info = appium_device.info()
    assert (info.width, info.height) == (1080, 1920)
    assert info.model == "Fake"
    assert info.serial == appium_device.serial


def test_page_source_parses_to_the_elements_a_person_sees(appium_device: AppiumDevice) -> None:
    screen = appium_device.observe()
    by_id = {e.resource_id: e for e in screen.elements}
    assert set(by_id) == {"title", "save", "cancel", "name", "note"}  # the hidden row is left out
    save = by_id["save"]
    assert (save.role, save.text, save.actions) == ("MockButton", "Save", ("tap",))
    assert save.bounds.center == (250, 260)
    assert by_id["name"].editable and "type" in by_id["name"].actions
    assert "[1] MockButton \"Save\" id=save tap" in screen.to_text()
    assert appium_device.observe().digest == screen.digest  # unchanged screen, same ids and digest


def test_click_sends_one_touch_tap_at_the_point(appium_device: AppiumDevice) -> None:
    appium_device.click(250, 260)
    log = appium_device.driver.execute("getLog", {"type": "actions"})["value"]
    (sequence,) = log[-1]
    assert sequence["parameters"] == {"pointerType": "touch"}
    kinds = [a["type"] for a in sequence["actions"]]
    assert kinds == ["pointerMove", "pointerDown", "pause", "pointerUp"]
    assert (sequence["actions"][0]["x"], sequence["actions"][0]["y"]) == (250, 260)


@pytest.mark.parametrize("text", ["7:30 tomorrow", "it's \"quoted\"; $(rm -rf /) `x` | & >", "line1\nline2", "你好 👋 café"])
def test_set_text_replaces_the_text_exactly(appium_device: AppiumDevice, text: str) -> None:
    appium_device.set_text(ui_selector(resourceId="name"), "old text")
    appium_device.set_text(ui_selector(resourceId="name"), text)
    assert appium_device.find(ui_selector(resourceId="name")).text == text


def test_set_text_by_class_and_instance_picks_the_nth_input(appium_device: AppiumDevice) -> None:
    # What the GUI tools send for an input without a resource id: the parsed class + instance.
    field = next(e for e in appium_device.observe().elements if e.resource_id == "note")
    appium_device.set_text(ui_selector(className=field.class_name, instance=1), "second")
    assert appium_device.find(ui_selector(resourceId="note")).text == "second"
    assert appium_device.find(ui_selector(resourceId="name")).text == ""


def test_selectors_by_text_with_quotes_and_combined_fields(appium_device: AppiumDevice) -> None:
    assert appium_device.find(ui_selector(text="Don't save")).rect["x"] == 500
    element = appium_device.find(ui_selector(text="Don't save", className="MockButton"))
    assert element.rect["x"] == 500
    with pytest.raises(ElementNotFound):
        appium_device.find(ui_selector(text="Save", className="MockInputField"))


def test_errors_map_onto_device_errors(appium_device: AppiumDevice) -> None:
    with pytest.raises(ElementNotFound) as missing:
        appium_device.set_text(ui_selector(resourceId="nope"), "x")
    assert missing.value.code == "element_not_found" and not missing.value.infra
    with pytest.raises(ElementNotFound):
        appium_device.set_text(ui_selector(resourceId="name", instance=3), "x")
    with pytest.raises(UiRpcError) as not_editable:  # a button takes no text
        appium_device.set_text(ui_selector(resourceId="save"), "x")
    assert not not_editable.value.infra


def test_commands_the_driver_lacks_raise_driver_unsupported(appium_device: AppiumDevice) -> None:
    with pytest.raises(DriverUnsupported, match="mobile: shell"):
        appium_device.shell("echo hi")
    with pytest.raises(DriverUnsupported, match="mobile: pressKey"):
        appium_device.press("back")
    with pytest.raises(DriverUnsupported, match="unknown key"):
        appium_device.press("warp")


def test_a_command_longer_than_mobile_shell_carries_is_the_callers_error(appium_device: AppiumDevice) -> None:
    for command, hint in ((["echo", "x" * 70_000], "mobile: shell carries"), (["echo", "y" * 200_000], "one value")):
        with pytest.raises(CommandTooLong, match=hint) as caught:
            appium_device.shell(command)
        assert caught.value.code == "invalid_arguments" and not caught.value.infra
    with pytest.raises(DriverUnsupported):  # the session is untouched: short commands still reach it
        appium_device.shell("echo hi")


def test_screenshot_is_a_png(appium_device: AppiumDevice) -> None:
    assert appium_device.screenshot().startswith(b"\x89PNG\r\n\x1a\n")


def test_close_ends_the_session_on_the_server(appium_server, fake_app: Path) -> None:
    device = AppiumDevice(appium_server.url, appium_server.capabilities(fake_app))
    with device:
        session = device.driver.session_id
        assert httpx.get(f"{appium_server.url}/session/{session}/source").status_code == 200
    assert httpx.get(f"{appium_server.url}/session/{session}/source").status_code == 404
    with pytest.raises(DeviceOffline, match="not connected"):
        device.dump_hierarchy()
    device.close()  # closing twice is harmless


def test_a_session_deleted_behind_our_back_is_offline(appium_device: AppiumDevice, appium_server) -> None:
    httpx.delete(f"{appium_server.url}/session/{appium_device.driver.session_id}")
    with pytest.raises(DeviceOffline):
        appium_device.dump_hierarchy()


def test_a_session_the_server_refuses_is_offline(appium_server, tmp_path: Path) -> None:
    caps = appium_server.capabilities(tmp_path / "missing.xml")
    caps["appium:automationName"] = "NoSuchDriver"
    with pytest.raises(DeviceOffline, match="create a session"):
        AppiumDevice(appium_server.url, caps).connect()


def test_a_dead_server_url_is_offline_at_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    device = AppiumDevice(f"http://127.0.0.1:{port}", {"platformName": "Android"})
    started = time.monotonic()
    with pytest.raises(DeviceOffline):
        device.connect()
    assert time.monotonic() - started < 5  # a refusal, not a hang


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()


def test_a_server_that_never_answers_times_out(silent_server: str) -> None:
    with pytest.raises(DeviceTimeout):
        AppiumDevice(silent_server, {"platformName": "Android"}, timeout=0.5).connect()


def test_push_sends_the_bytes_base64_through_mobile_push_file(appium_device: AppiumDevice, appium_server,
                                                              tmp_path: Path) -> None:
    """The fake driver has no file system, so it refuses the command; what reached the server
    is in its log: the remote path and the payload, base64-encoded."""
    local = tmp_path / "notes.txt"
    local.write_bytes(b"pushed \x00\xff bytes")
    with pytest.raises(DriverUnsupported, match="mobile: pushFile"):
        appium_device.push(local, "/sdcard/Download/notes.txt")
    log = appium_server.log.read_text(errors="replace")
    assert "/sdcard/Download/notes.txt" in log
    assert base64.b64encode(b"pushed \x00\xff bytes").decode() in log
    with pytest.raises(FileNotFoundError):  # the caller's mistake: nothing is sent
        appium_device.push(tmp_path / "absent.txt", "/sdcard/Download/absent.txt")
    assert "/sdcard/Download/absent.txt" not in appium_server.log.read_text(errors="replace")
    assert appium_device.dump_hierarchy()  # the session is still fine
