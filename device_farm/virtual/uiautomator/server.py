"""The uiautomator2 server behind `tcp:9008`: HTTP/1.1 with keep-alive, `GET /ping`, and
JSON-RPC 2.0 on `POST /jsonrpc/0` with the methods uiautomator2 3.7.1 calls (dispatch and the
answers to malformed calls are in `jsonrpc`).

Several requests may arrive on one stream (bodies framed by Content-Length); each response
is written in one piece with a Content-Length. Missing views answer error -32002 with
`androidx.test.uiautomator.UiObjectNotFoundException` in the message, which uiautomator2
maps to UiObjectNotFoundError.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any, Callable

from device_farm.virtual.adbd.stream import AdbStream
from device_farm.virtual.os.screen import KEYCODES
from device_farm.virtual.os.system import AndroidSystem
from device_farm.virtual.ui.selector import describe, find, find_all
from device_farm.virtual.ui.views import ViewNode, hierarchy_xml, obj_info
from device_farm.virtual.uiautomator.jsonrpc import INVALID_PARAMS, Dispatcher, RpcError

logger = logging.getLogger(__name__)

ABSTRACT_SOCKET = "uiautomator2"
"""The abstract unix socket the server also answers on (`localabstract:uiautomator2`)."""
MAX_HEADER = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
POLL_S = 0.05
KEY_NAMES = {
    "home": "HOME", "back": "BACK", "left": "DPAD_LEFT", "right": "DPAD_RIGHT", "up": "DPAD_UP",
    "down": "DPAD_DOWN", "center": "DPAD_CENTER", "menu": "MENU", "search": "SEARCH",
    "enter": "ENTER", "delete": "DEL", "del": "DEL", "recent": "APP_SWITCH",
    "volume_up": "VOLUME_UP", "volume_down": "VOLUME_DOWN", "volume_mute": "VOLUME_MUTE",
    "camera": "CAMERA", "power": "POWER",
}


JAVA_INT = 2 ** 31


def coordinate(method: str, value: Any) -> float:
    """A coordinate as the server's ``int`` parameters bind it: a number (or a numeric string)
    in Java's int range; a boolean, an infinity or a larger number is invalid params."""
    if isinstance(value, bool):
        raise RpcError(*INVALID_PARAMS, f"{method}: a coordinate is a number, not {value!r}")
    number = float(value)  # a non-numeric string is a ValueError: invalid params too
    if not -JAVA_INT <= number < JAVA_INT:  # also false for NaN
        raise RpcError(*INVALID_PARAMS, f"{method}: coordinate {value!r} is out of range")
    return number


def not_found(selector: dict[str, Any]) -> RpcError:
    text = f"androidx.test.uiautomator.UiObjectNotFoundException: {describe(selector)}"
    return RpcError(-32002, text, text + "\n\tat com.wetest.uia2.stub.AutomatorServiceImpl.getUiObject")


class HttpError(ValueError):
    """The request is not HTTP we can answer; the stream is closed."""


NOT_CONNECTED = ("java.lang.IllegalStateException: UiAutomation not connected, "
                 "UiAutomation@4b1e1a0[id=-1, flags=0]")


class UiAutomatorServer:
    """Serves uiautomator2 clients on whatever system the phone currently runs.

    `before_request`, when set, is called for each HTTP request and answers how many
    seconds to hold it (the phone's fault injector counts requests there; a stall holds them). While the
    system's UiAutomation is disconnected every JSON-RPC call answers "UiAutomation not
    connected"; `/ping` still answers, as the HTTP server itself is alive.
    """

    def __init__(self, system: Callable[[], AndroidSystem]) -> None:
        self._system = system
        self.before_request: Callable[[str], float] | None = None
        self._rpc = Dispatcher({name[4:]: getattr(self, name) for name in dir(self) if name.startswith("rpc_")},
                               guard=self._require_ui_automation)

    # --- HTTP ----------------------------------------------------------------------
    async def serve(self, stream: AdbStream) -> None:
        buf = bytearray()
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = await stream.read()
                    if not data:
                        return
                    buf += data
                    if len(buf) > MAX_HEADER and b"\r\n\r\n" not in buf:
                        raise HttpError("request header too large")
                head, _, rest = bytes(buf).partition(b"\r\n\r\n")
                method, path, headers = self._parse_head(head)
                raw_length = headers.get("content-length", "0") or "0"
                if not raw_length.isdigit():
                    raise HttpError(f"bad Content-Length {raw_length[:40]!r}")
                length = int(raw_length)
                if length > MAX_BODY:
                    raise HttpError(f"bad Content-Length {length}")
                buf = bytearray(rest)
                while len(buf) < length:
                    data = await stream.read()
                    if not data:
                        return
                    buf += data
                body, buf = bytes(buf[:length]), buf[length:]
                if self.before_request is not None:
                    delay = self.before_request("uiautomator")
                    if delay > 0:
                        await asyncio.sleep(delay)
                status, ctype, payload = await self._route(method, path, body)
                keep = headers.get("connection", "").lower() != "close"
                head_out = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                            f"Content-Length: {len(payload)}\r\n"
                            f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n")
                await stream.write(head_out.encode() + payload)
                if not keep:
                    return
        except HttpError as exc:
            logger.warning("uiautomator2 server: closing stream: %s", exc)

    @staticmethod
    def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            raise HttpError(f"bad request line {lines[0][:80]!r}")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        return parts[0], parts[1], headers

    async def _route(self, method: str, path: str, body: bytes) -> tuple[str, str, bytes]:
        if method == "GET" and path == "/ping":
            return "200 OK", "text/plain", b"pong"
        if method == "GET" and path == "/version":
            return "200 OK", "text/plain", b"3.7.1"
        if method == "POST" and path.startswith("/jsonrpc/0"):
            if not body:  # NanoHTTPD hands the server no post data to read
                return "500 Internal Server Error", "text/plain", b"Invalid http post data!"
            return "200 OK", "application/json; charset=UTF-8", await self._rpc.handle(body)
        return "404 Not Found", "text/plain", b"Not Found"

    def _require_ui_automation(self) -> None:
        if not self.system.ui_automation_connected:
            raise RpcError(-32001, NOT_CONNECTED, NOT_CONNECTED + "\n\tat android.app.UiAutomation"
                           ".throwIfNotConnectedLocked(UiAutomation.java:1548)")

    # --- helpers ---------------------------------------------------------------------
    @property
    def system(self) -> AndroidSystem:
        return self._system()

    def _require(self, selector: dict[str, Any]) -> ViewNode:
        node = find(self.system.window(), selector)
        if node is None:
            raise not_found(selector)
        return node

    async def _wait(self, selector: dict[str, Any], timeout_ms: float, present: bool) -> bool:
        deadline = asyncio.get_running_loop().time() + max(0.0, timeout_ms) / 1000
        while True:
            if (find(self.system.window(), selector) is not None) == present:
                return True
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(POLL_S)

    # --- JSON-RPC methods (names after `rpc_` are the wire names) -----------------------
    def rpc_deviceInfo(self) -> dict[str, Any]:
        s = self.system
        d = s.display
        return {
            "currentPackageName": s.focus()[0], "displayHeight": d.height,
            "displayRotation": 0, "displaySizeDpX": d.dp(d.width),
            "displaySizeDpY": d.dp(d.height), "displayWidth": d.width,
            "productName": s.props["ro.product.name"], "screenOn": s.screen_on,
            "sdkInt": int(s.props["ro.build.version.sdk"]), "naturalOrientation": True,
        }

    async def _slow_screen(self) -> None:
        delay = self.system.screen_delay()
        if delay:
            await asyncio.sleep(delay)

    async def rpc_dumpWindowHierarchy(self, compressed: bool = False, maxDepth: int = 50,
                                      rootInActive: bool | None = None) -> str:
        await self._slow_screen()
        return hierarchy_xml(self.system.window(), max_depth=int(maxDepth or 50))

    async def rpc_click(self, *args: Any) -> bool:
        if args and isinstance(args[0], dict):
            selector, timeout = args[0], float(args[1]) if len(args) > 1 else 0.0
            if timeout and not await self._wait(selector, timeout, True):
                raise not_found(selector)
            x, y = self._require(selector).bounds.center
        elif len(args) >= 2:
            x, y = args[0], args[1]
        else:
            raise RpcError(*INVALID_PARAMS, "click(x, y) or click(selector[, timeout])")
        self.system.tap(coordinate("click", x), coordinate("click", y))
        return True

    def rpc_longClick(self, *args: Any) -> bool:
        return True

    def rpc_exist(self, selector: dict[str, Any]) -> bool:
        return find(self.system.window(), selector) is not None

    async def rpc_waitForExists(self, selector: dict[str, Any], timeout: float = 0) -> bool:
        return await self._wait(selector, timeout, True)

    async def rpc_waitUntilGone(self, selector: dict[str, Any], timeout: float = 0) -> bool:
        return await self._wait(selector, timeout, False)

    def rpc_objInfo(self, selector: dict[str, Any]) -> dict[str, object]:
        return obj_info(self._require(selector))

    def rpc_objInfoOfAllInstances(self, selector: dict[str, Any]) -> list[dict[str, object]]:
        return [obj_info(n) for n in find_all(self.system.window(), selector)]

    def rpc_count(self, selector: dict[str, Any]) -> int:
        return len(find_all(self.system.window(), selector))

    def rpc_getText(self, selector: dict[str, Any]) -> str:
        return self._require(selector).text

    def rpc_setText(self, selector: dict[str, Any], text: str) -> bool:
        node = self._require(selector)
        if not node.editable:
            return False
        self.system.set_text(node, text)
        return True

    def rpc_clearTextField(self, selector: dict[str, Any]) -> None:
        node = self._require(selector)
        self.system.set_text(node, "")

    def rpc_pressKey(self, key: str) -> bool:
        name = KEY_NAMES.get(key.lower())
        if name is None:
            raise RpcError(-32002, f"java.lang.IllegalArgumentException: unknown key {key}")
        self.system.key(KEYCODES[name])
        return True

    def rpc_pressKeyCode(self, code: int, meta: int = 0) -> bool:
        self.system.key(int(code))
        return True

    def rpc_injectInputEvent(self, action: int, x: float, y: float, meta: int = 0) -> bool:
        x, y = coordinate("injectInputEvent", x), coordinate("injectInputEvent", y)
        if action == 1:  # ACTION_UP completes a tap
            self.system.tap(x, y)
        return True

    async def rpc_takeScreenshot(self, scale: float = 1.0, quality: int = 80) -> str:
        """Base64 JPEG of the screen, as the real server answers `takeScreenshot`."""
        await self._slow_screen()
        scale = float(scale) if scale else 1.0
        if not 0 < scale <= 1:
            raise RpcError(*INVALID_PARAMS, f"takeScreenshot: scale {scale} not in (0, 1]")
        return base64.b64encode(self.system.screenshot("jpeg", scale, int(quality))).decode()

    def rpc_swipe(self, sx: float, sy: float, ex: float, ey: float, steps: int = 10) -> bool:
        sx, sy, ex, ey = (coordinate("swipe", v) for v in (sx, sy, ex, ey))
        self.system.swipe(sx, sy, ex, ey, int(steps) * 5)
        return True

    def rpc_swipePoints(self, *args: Any) -> bool:
        return True

    def rpc_drag(self, *args: Any) -> bool:
        return True

    def rpc_wakeUp(self) -> None:
        self.system.screen_on = True

    def rpc_sleep(self) -> None:
        self.system.screen_on = False

    def rpc_setClipboard(self, label: str | None, text: str) -> None:
        self.system.clipboard = text

    def rpc_getClipboard(self) -> str | None:
        return self.system.clipboard

    def rpc_clearInputText(self) -> None:
        field = self.system.focused_field()
        if field is not None:
            self.system.set_text(field, "")

    def rpc_pasteClipboard(self) -> None:
        if self.system.clipboard:
            self.system.input_text(self.system.clipboard)

    def rpc_setOrientation(self, value: str) -> None:
        return None

    def rpc_freezeRotation(self, freeze: bool = True) -> None:
        return None

    def rpc_getLastToast(self) -> str | None:
        return None

    def rpc_clearLastToast(self) -> None:
        return None

    def rpc_makeToast(self, text: str, duration: float = 1000) -> bool:
        return True

    def rpc_getLastTraversedText(self) -> str | None:
        return None

    def rpc_clearLastTraversedText(self) -> None:
        return None

    def rpc_openNotification(self) -> bool:
        if not self.system.dialogs:
            self.system.shade_open = True
        return True

    def rpc_openQuickSettings(self) -> bool:
        return True


