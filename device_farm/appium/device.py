"""AppiumDevice: the Device protocol over an Appium server, grid or device cloud.

Built on appium-python-client (W3C WebDriver over HTTP). Shell commands go through
``mobile: shell`` (UiAutomator2 only, and only when the server allows its ``adb_shell`` insecure
feature), the hierarchy is the driver's page source converted to the uiautomator dump shape
(:mod:`device_farm.appium.xml`), taps are W3C pointer actions and keys go through
``mobile: pressKey``. Every Selenium, Appium or transport failure surfaces as a
:mod:`device_farm.errors` subclass; a command the driver lacks raises :class:`DriverUnsupported`.
"""

from __future__ import annotations

import base64
import re
import shlex
import socket
from typing import Any, Callable, Sequence, TypeVar
from urllib.parse import urlsplit

import urllib3
from selenium.common import exceptions as wd

from device_farm import DeviceInfo, Payload, ShellResult, payload_bytes
from device_farm.appium.xml import INPUT_CLASS, INPUT_KINDS, to_uiautomator_xml
from device_farm.command_size import CHECK_ABOVE_CHARS, check_command
from device_farm.errors import (
    CommandTooLong, DeviceError, DeviceOffline, DeviceTimeout, ElementNotFound, ShellCommandError, UiRpcError, UiServerDown,
)
from device_farm.hierarchy import Screen, parse_hierarchy

T = TypeVar("T")

# Android key codes (android.view.KeyEvent) for the keys the harness presses.
KEYCODES = {"back": 4, "home": 3, "enter": 66, "menu": 82, "delete": 67, "recent": 187, "app_switch": 187,
            "volume_up": 24, "volume_down": 25, "power": 26, "search": 84, "tab": 61, "space": 62}
_EXIT_MARK = "X4APPIUMEXIT:"
# How UiAutomator2 and XCUITest say their on-device server died under a live session.
_UI_SERVER_GONE = ("instrumentation process is not running", "Could not proxy command to the remote server",
                   "WebDriverAgent is not running")
_EXIT_RE = re.compile(re.escape(_EXIT_MARK) + r"(\d+)\s*$")
# ``mobile: shell`` runs ``adb shell`` on the Appium host, whose request to its adb server
# announces its length in four hex digits: past 65535 bytes (less the service prefix and the
# exit marker) it would desync that stream, and the driver offers no stdin to send more.
_MAX_MOBILE_SHELL_BYTES = 0xFFFF - 256


class DriverUnsupported(DeviceError):
    """The Appium driver (or the server's security settings) does not offer this command.

    A setup fault, not the planner's: e.g. ``mobile: shell`` without ``--allow-insecure
    uiautomator2:adb_shell``, or a key press on a driver that has no key events.
    """

    code = "action_failed"


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # a refusal, though urllib3 files it under timeouts
        return False
    if isinstance(exc, (TimeoutError, socket.timeout, urllib3.exceptions.TimeoutError)):
        return True
    reason = getattr(exc, "reason", None)  # MaxRetryError wraps the real cause
    return isinstance(reason, BaseException) and _is_timeout(reason)


def map_error(exc: Exception, what: str) -> DeviceError:
    """The :mod:`device_farm.errors` subclass for an exception raised by the Appium client."""
    message = str(getattr(exc, "msg", None) or exc).strip()
    first = message.splitlines()[0].split("; For documentation")[0] if message else type(exc).__name__
    text = f"{what}: {first}"
    if isinstance(exc, wd.NoSuchElementException):
        return ElementNotFound(text)
    if _is_timeout(exc) or isinstance(exc, wd.TimeoutException):
        return DeviceTimeout(text)
    if isinstance(exc, (wd.InvalidSessionIdException, wd.SessionNotCreatedException, wd.NoSuchDriverException,
                        urllib3.exceptions.HTTPError, ConnectionError)):
        return DeviceOffline(text)
    if any(sign in str(exc) for sign in _UI_SERVER_GONE):
        return UiServerDown(text)
    if isinstance(exc, wd.UnknownMethodException) or "insecure feature" in str(exc):
        return DriverUnsupported(text)
    if isinstance(exc, (wd.InvalidElementStateException, wd.ElementNotInteractableException,
                        wd.StaleElementReferenceException, wd.InvalidSelectorException,
                        wd.InvalidArgumentException)):
        return UiRpcError(text)
    return DeviceError(text)


class AppiumDevice:
    """One Appium session. Constructing it does no I/O; :meth:`connect` creates the session.

    ``capabilities`` are W3C capabilities as the server expects them (``platformName``,
    ``appium:automationName``, ``appium:udid``...). ``timeout`` bounds every HTTP request,
    session creation included; connecting is given at most 10 s of it.
    """

    def __init__(self, server_url: str, capabilities: dict[str, Any], *, timeout: float = 60.0,
                 serial: str | None = None) -> None:
        self.server_url = server_url.rstrip("/")
        self.capabilities = dict(capabilities)
        self.timeout = timeout
        caps = self.capabilities
        udid = caps.get("appium:udid") or caps.get("udid") or caps.get("appium:deviceName")
        self.serial = serial or str(udid or f"appium@{urlsplit(self.server_url).netloc}")
        self._driver: Any = None

    # -- lifecycle -------------------------------------------------------------------------
    def connect(self) -> None:
        from appium import webdriver  # imports selenium's whole tree: only when used
        from appium.options.common import AppiumOptions
        from appium.webdriver.client_config import AppiumClientConfig

        options = AppiumOptions()
        options.load_capabilities(self.capabilities)
        config = AppiumClientConfig(
            remote_server_addr=self.server_url,
            timeout=urllib3.Timeout(connect=min(10.0, self.timeout), read=self.timeout),
        )
        try:
            self._driver = webdriver.Remote(options=options, client_config=config)
        except (wd.WebDriverException, urllib3.exceptions.HTTPError, OSError) as exc:
            error = map_error(exc, f"{self.serial}: create a session")
            # A session the server cannot create (no such driver, device busy or absent) leaves
            # the device unusable from here: offline, unless it merely answered too slowly.
            raise (error if isinstance(error, (DeviceOffline, DeviceTimeout)) else DeviceOffline(str(error))) from exc

    def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            try:
                driver.quit()
            except (wd.WebDriverException, urllib3.exceptions.HTTPError, OSError):
                pass  # the session or the server is already gone; nothing left to release

    def __enter__(self) -> AppiumDevice:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def driver(self) -> Any:
        """The appium ``webdriver.Remote`` of the session (raises DeviceOffline before connect)."""
        if self._driver is None:
            raise DeviceOffline(f"{self.serial}: not connected")
        return self._driver

    @property
    def session_capabilities(self) -> dict[str, Any]:
        return dict(self.driver.capabilities)

    @property
    def automation_name(self) -> str:
        caps = self._driver.capabilities if self._driver is not None else self.capabilities
        return str(caps.get("automationName") or caps.get("appium:automationName") or "")

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except (wd.WebDriverException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise map_error(exc, f"{self.serial}: {what}") from exc

    # -- Device protocol -------------------------------------------------------------------
    def info(self) -> DeviceInfo:
        size = self._call("window size", lambda: self.driver.get_window_size())
        caps = self.session_capabilities
        sdk = caps.get("deviceApiLevel") or caps.get("platformVersion") or 0
        try:
            sdk_int = int(str(sdk).split(".")[0])
        except ValueError:
            sdk_int = 0
        return DeviceInfo(
            serial=self.serial,
            model=str(caps.get("deviceModel") or caps.get("deviceName") or caps.get("platformName") or ""),
            sdk=sdk_int,
            width=int(size.get("width", 0)),
            height=int(size.get("height", 0)),
        )

    def shell(self, command: str | Sequence[str], *, timeout: float = 20.0) -> ShellResult:
        """Run a device shell command through ``mobile: shell``.

        Needs the UiAutomator2 driver and a server started with ``--allow-insecure
        uiautomator2:adb_shell`` (or ``--relaxed-security``); otherwise raises DriverUnsupported.
        The exit status is read from a marker echoed after the command, as adbutils does. A
        command over what ``adb shell`` can carry (64 KiB) or a phone takes raises
        :class:`~device_farm.errors.CommandTooLong` before the server is asked.
        """
        text = command if isinstance(command, str) else shlex.join(command)
        if len(text) > _MAX_MOBILE_SHELL_BYTES // 4:
            self._check_size(command, text)
        args = {"command": f"{text}; echo {_EXIT_MARK}$?", "includeStderr": True, "timeout": int(timeout * 1000)}
        reply = self._call(f"shell {text!r}", lambda: self.driver.execute_script("mobile: shell", args))
        if isinstance(reply, dict):
            out, err = str(reply.get("stdout") or ""), str(reply.get("stderr") or "")
        else:
            out, err = str(reply or ""), ""
        match = _EXIT_RE.search(out)
        code = int(match.group(1)) if match else 0
        if match:
            out = out[: match.start()]
        return ShellResult(command=text, output=out + err, exit_code=code)

    @staticmethod
    def _check_size(command: str | Sequence[str], text: str) -> None:
        if len(text) > CHECK_ABOVE_CHARS:
            check_command(command, text)
        size = len(text.encode())
        if size > _MAX_MOBILE_SHELL_BYTES:
            raise CommandTooLong(
                f"the command is {size:,} bytes; Appium's mobile: shell carries at most "
                f"{_MAX_MOBILE_SHELL_BYTES:,} ({_MAX_MOBILE_SHELL_BYTES // 1024} KiB): send less text in one call"
            )

    def dump_hierarchy(self) -> str:
        """The page source in the uiautomator dump shape (UiAutomator2's own source as is)."""
        return to_uiautomator_xml(self._call("page source", lambda: self.driver.page_source))

    def observe(self) -> Screen:
        return parse_hierarchy(self.dump_hierarchy())

    def screenshot(self) -> bytes:
        """The screen as PNG bytes."""
        data = self._call("screenshot", lambda: self.driver.get_screenshot_as_base64())
        return base64.b64decode(data)

    def push(self, data: Payload, remote: str, mode: int = 0o644) -> None:
        """Write ``data`` (bytes or a local file) to ``remote`` with ``mobile: pushFile``.

        The bytes travel base64-encoded in the WebDriver request. Appium leaves the new file's
        permission bits to the driver (``adb push`` gives 0644 on Android), so another ``mode``
        is set with ``chmod`` over :meth:`shell`, which needs the server's ``adb_shell``
        feature; a driver without ``mobile: pushFile`` raises DriverUnsupported.
        """
        encoded = base64.b64encode(payload_bytes(data)).decode("ascii")
        self._call(f"push {remote}", lambda: self.driver.execute_script(
            "mobile: pushFile", {"remotePath": remote, "payload": encoded}))
        if mode != 0o644:
            result = self.shell(["chmod", f"{mode:o}", remote])
            if not result.ok:
                raise ShellCommandError(f"chmod {mode:o} {remote}", result.exit_code, result.output)

    def click(self, x: int, y: int) -> None:
        """A tap at (x, y) as one W3C touch-pointer action (move, down, up)."""
        self.swipe(x, y, x, y, 0.05)

    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None:
        self.swipe(x, y, x, y, seconds)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.3) -> None:
        """Touch down at (x1, y1), move to (x2, y2) over ``seconds``, lift: a W3C touch action."""
        from selenium.webdriver.common.actions import interaction
        from selenium.webdriver.common.actions.action_builder import ActionBuilder
        from selenium.webdriver.common.actions.pointer_input import PointerInput

        def gesture() -> None:
            finger = PointerInput(interaction.POINTER_TOUCH, "finger")
            builder = ActionBuilder(self.driver, mouse=finger, duration=0)
            builder.pointer_action.move_to_location(int(x1), int(y1)).pointer_down()
            if (x1, y1) == (x2, y2):
                builder.pointer_action.pause(seconds)
            else:
                finger.create_pointer_move(duration=int(seconds * 1000), x=int(x2), y=int(y2), origin="viewport")
            builder.pointer_action.release()
            builder.perform()

        self._call(f"gesture ({x1}, {y1}) → ({x2}, {y2})", gesture)

    def find(self, selector: dict) -> Any:
        """The WebElement matching a uiautomator selector dict (see :func:`locator_for`)."""
        by, value, index = locator_for(selector, self.automation_name)
        if index == 0:
            return self._call(f"find {selector_text(selector)}", lambda: self.driver.find_element(by, value))
        found = self._call(f"find {selector_text(selector)}", lambda: self.driver.find_elements(by, value))
        if len(found) <= index:
            raise ElementNotFound(f"{self.serial}: no element {selector_text(selector)} ({len(found)} match)")
        return found[index]

    def set_text(self, selector: dict, text: str) -> None:
        """Replace the text of the element matching ``selector``: clear, then send the keys.

        The text travels as JSON in the WebDriver request, never through a shell.
        """
        element = self.find(selector)
        self._call(f"clear {selector_text(selector)}", element.clear)
        self._call(f"type into {selector_text(selector)}", lambda: element.send_keys(text))

    def press(self, key: str) -> None:
        """Press ``back``, ``home``, ``enter``... (Android key events via ``mobile: pressKey``)."""
        code = KEYCODES.get(key.lower())
        if code is None:
            raise DriverUnsupported(f"{self.serial}: unknown key {key!r}; known: {', '.join(sorted(KEYCODES))}")
        self._call(f"press {key}", lambda: self.driver.execute_script("mobile: pressKey", {"keycode": code}))


# -- selectors -------------------------------------------------------------------------------
_SELECTOR_KEYS = ("resourceId", "text", "className", "description", "instance")


def selector_text(selector: dict) -> str:
    return ", ".join(f"{k}={selector[k]!r}" for k in _SELECTOR_KEYS if k in selector) or "{}"


def _java_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _xpath_literal(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return "concat(" + ", \"'\", ".join(f"'{part}'" for part in value.split("'")) + ")"


def locator_for(selector: dict, automation_name: str) -> tuple[str, str, int]:
    """(strategy, value, index among matches) for a uiautomator selector dict.

    UiAutomator2 gets a ``-android uiautomator`` UiSelector, exact for every field. Other
    drivers get the plain W3C/Appium strategy when one field names the element (id,
    accessibility id, class name) and otherwise an XPath that accepts each field under the
    attribute names drivers use for it (``resource-id``/``id``/``name``, ``text``/``label``/
    ``value``...). ``instance`` picks the n-th match either way.
    """
    fields = {k: selector[k] for k in ("resourceId", "text", "className", "description") if selector.get(k) not in (None, "")}
    unknown = {k for k in selector if k not in _SELECTOR_KEYS and k not in ("mask", "childOrSibling", "childOrSiblingSelector")}
    if unknown or not fields:
        raise UiRpcError(f"selector {selector!r} has no field Appium can use (supported: {', '.join(_SELECTOR_KEYS)})")
    instance = int(selector.get("instance") or 0)
    if automation_name.lower() == "uiautomator2":
        methods = {"resourceId": "resourceId", "text": "text", "className": "className", "description": "description"}
        chain = "".join(f".{methods[k]}({_java_string(str(v))})" for k, v in fields.items())
        return "-android uiautomator", f"new UiSelector(){chain}.instance({instance})", 0
    if len(fields) == 1:
        (key, value), = fields.items()
        strategy = {"resourceId": "id", "description": "accessibility id", "className": "class name"}.get(key)
        if strategy is not None and not (key == "className" and value == INPUT_CLASS):
            return strategy, str(value), instance
    attrs = {"resourceId": ("resource-id", "id", "name"), "text": ("text", "label", "value"),
             "className": ("class", "type"), "description": ("content-desc", "name", "label")}
    preds = []
    for key, value in fields.items():
        literal = _xpath_literal(str(value))
        options = [f"@{a}={literal}" for a in attrs[key]]
        if key == "className":
            options.append(f"local-name()={literal}")
            if value == INPUT_CLASS:  # what appium_xml renamed text inputs to
                options.extend(f"contains(local-name(), '{kind}')" for kind in INPUT_KINDS)
        preds.append("(" + " or ".join(options) + ")")
    return "xpath", "//*[" + " and ".join(preds) + "]", instance
