"""Screenshots of the virtual phone through the real clients: `adb exec-out screencap -p`,
adbutils' `screenshot()`, and uiautomator2's `screenshot()` (JSON-RPC takeScreenshot)."""

from __future__ import annotations

import base64
import io
import struct
from typing import Callable

import uiautomator2 as u2
from PIL import Image, ImageChops

from device_farm.virtual.os.screen import STATUS_BAR_HEIGHT
from device_farm.virtual.os.system import AndroidSystem

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(handle) -> Image.Image:
    out = handle.adb_cli("exec-out", "screencap -p")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(PNG_MAGIC)
    img = Image.open(io.BytesIO(out.stdout))
    img.load()
    return img


def test_exec_out_screencap_is_a_png_that_follows_the_screen(virtual_phone):
    home = _png(virtual_phone)
    assert home.size == (1080, 2400)
    virtual_phone.device.shell("am start -a android.intent.action.SHOW_ALARMS")
    clock = _png(virtual_phone)
    assert clock.size == (1080, 2400)
    diff = ImageChops.difference(home.convert("RGB"), clock.convert("RGB")).getbbox()
    assert diff is not None and diff[3] - diff[1] > 1000  # most of the screen changed


def test_adbutils_screenshot_and_shell_bytes(virtual_phone):
    d = virtual_phone.device
    assert d.screenshot().size == (1080, 2400)
    raw = d.shell(["screencap", "-p"], encoding=None)
    assert raw.startswith(PNG_MAGIC)


def test_screencap_raw_and_to_file(virtual_phone):
    d = virtual_phone.device
    raw = d.shell(["screencap"], encoding=None)
    width, height, fmt, _ = struct.unpack("<4I", raw[:16])
    assert (width, height, fmt) == (1080, 2400, 1) and len(raw) == 16 + 1080 * 2400 * 4
    assert d.shell2("screencap -p /sdcard/s.png").returncode == 0
    assert d.sync.read_bytes("/sdcard/s.png").startswith(PNG_MAGIC)


def test_uiautomator2_screenshot_is_a_pil_image_of_the_screen(virtual_phone):
    d = u2.connect(virtual_phone.device)
    img = d.screenshot()
    assert img.size == (1080, 2400) and img.mode == "RGB"
    half = d.jsonrpc.takeScreenshot(0.5, 50)
    assert Image.open(io.BytesIO(base64.b64decode(half))).size == (540, 1200)


Box = tuple[int, int, int, int]


def _flip_the_alarm_switch(handle, between_shots: Callable[[], None] = lambda: None
                           ) -> tuple[Box | None, Box | None, Box]:
    """For one tap on an alarm's on/off switch: (box around the pixels that changed below the
    status bar, box around those that changed anywhere, the switch's bounds). The status bar
    is left out of the first: its clock turns on its own, so a minute ending between the two
    shots is not something the tap changed."""
    d = handle.device
    d.shell("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR 7 "
            "--ei android.intent.extra.alarm.MINUTES 30")
    before = _png(handle).convert("RGB")
    ui = u2.connect(d)
    ui(resourceId="com.google.android.deskclock:id/onoff").click()
    between_shots()
    after = _png(handle).convert("RGB")
    left, top, right, bottom = ui(resourceId="com.google.android.deskclock:id/onoff").bounds()
    below_bar = (0, STATUS_BAR_HEIGHT, before.width, before.height)
    box = ImageChops.difference(before.crop(below_bar), after.crop(below_bar)).getbbox()
    moved = None if box is None else (box[0], box[1] + STATUS_BAR_HEIGHT, box[2], box[3] + STATUS_BAR_HEIGHT)
    return moved, ImageChops.difference(before, after).getbbox(), (left, top, right, bottom)


def test_screen_shows_state_visibly(virtual_phone):
    """A switch flipped through the UI changes the pixels where the switch is drawn, and none
    elsewhere on the app's screen."""
    box, _, (left, top, right, bottom) = _flip_the_alarm_switch(virtual_phone)
    assert box is not None
    assert left <= box[0] and box[2] <= right and top <= box[1] and box[3] <= bottom


def test_a_minute_turning_between_two_shots_is_not_a_change_on_the_app_screen(virtual_phone, monkeypatch):
    clock = AndroidSystem.now

    def a_minute_on() -> None:
        monkeypatch.setattr(AndroidSystem, "now", lambda self: clock(self) + 60)

    box, anywhere, (left, top, right, bottom) = _flip_the_alarm_switch(virtual_phone, between_shots=a_minute_on)
    assert anywhere is not None and anywhere[1] < STATUS_BAR_HEIGHT  # the status bar's clock did turn
    assert box is not None
    assert left <= box[0] and box[2] <= right and top <= box[1] and box[3] <= bottom


def test_screen_off_is_black(virtual_phone):
    d = virtual_phone.device
    d.shell("input keyevent SLEEP")
    assert d.screenshot().getextrema() == ((0, 0), (0, 0), (0, 0))
