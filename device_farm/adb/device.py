"""AdbDevice: a phone reached through an adb server and its uiautomator2 server.

Shell commands and device sockets go through the lean host-protocol client in
:mod:`device_farm.adb.host` (adbutils for the rest); UI calls go to the on-device uiautomator2 JSON-RPC
server over one kept-alive ``tcp:9008`` stream (:mod:`device_farm.adb.u2rpc`). uiautomator2 itself
is used only for setup (pushing its jar and starting the server) when the server is not already
answering. Every adb or transport failure surfaces as a :mod:`device_farm.errors` subclass.
"""

from __future__ import annotations

import logging
import shlex
import socket
import time
from typing import Any, Sequence

import adbutils

from device_farm import DeviceInfo, Payload, ShellResult, payload_bytes
from device_farm.adb.host import AdbHost, host_query
from device_farm.adb.u2rpc import HttpOverStream, JsonRpcClient
from device_farm.command_size import CHECK_ABOVE_CHARS, check_command
from device_farm.errors import DeviceOffline, ShellCommandError, UiServerDown
from device_farm.hierarchy import Screen, parse_hierarchy

log = logging.getLogger(__name__)

UI_SERVER_PORT = 9008
JAR_PATH = "/data/local/tmp/u2.jar"


def list_states(adb_host: str = "127.0.0.1", adb_port: int = 5037) -> dict[str, str]:
    """Every device the adb server lists, serial → state (``device``, ``unauthorized``, ``offline``...)."""
    listing = host_query(adb_host, adb_port, "host:devices")
    return {parts[0]: parts[1] for parts in (line.split("\t") for line in listing.splitlines()) if len(parts) == 2}


def list_serials(adb_host: str = "127.0.0.1", adb_port: int = 5037) -> list[str]:
    """Serials of the devices the adb server lists as ready (state ``device``)."""
    return [serial for serial, state in list_states(adb_host, adb_port).items() if state == "device"]


class AdbDevice:
    """One phone behind an adb server. Constructing it does no I/O; call :meth:`connect`."""

    def __init__(
        self, serial: str, *, adb_host: str = "127.0.0.1", adb_port: int = 5037, ui_port: int = UI_SERVER_PORT
    ) -> None:
        self.serial = serial
        self.adb_host, self.adb_port, self.ui_port = adb_host, adb_port, ui_port
        self._dev: adbutils.AdbDevice | None = None
        self._host = AdbHost(serial, adb_host, adb_port)
        self._http: HttpOverStream | None = None
        self._rpc: JsonRpcClient | None = None
        self._u2_server: Any = None  # keeps uiautomator2's launcher (and its shell stream) alive
        self._u2_process: Any = None  # a server this device relaunched after a crash

    # -- lifecycle -------------------------------------------------------------------------
    def connect(self) -> None:
        # A raw host query: adbutils' client would start a server on 5037 if this one is down.
        state = host_query(self.adb_host, self.adb_port, f"host-serial:{self.serial}:get-state").strip()
        if state != "device":
            raise DeviceOffline(f"{self.serial} is {state}, not ready")
        client = adbutils.AdbClient(host=self.adb_host, port=self.adb_port, socket_timeout=20)
        self._dev = client.device(self.serial)  # for uiautomator2's setup and recovery only
        self._http = HttpOverStream(self._open_ui_socket)
        self._rpc = JsonRpcClient(self._http)
        if not self._rpc.ping():
            self._start_ui_server()

    def _open_ui_socket(self) -> socket.socket:
        return self._host.open(f"tcp:{self.ui_port}")

    def _start_ui_server(self) -> None:
        from uiautomator2.core import BasicUiautomatorServer  # heavy import, only for setup

        log.info("starting the uiautomator2 server on %s", self.serial)
        try:
            self._u2_server = BasicUiautomatorServer(self._adb, self.ui_port)
        except Exception as exc:  # uiautomator2 raises a variety of its own errors here
            raise UiServerDown(f"{self.serial}: could not start the uiautomator2 server: {exc}") from exc
        if not self.rpc.ping():
            raise UiServerDown(f"{self.serial}: uiautomator2 server does not answer /ping")

    def ui_call(self, method: str, *params: Any) -> Any:
        """A uiautomator JSON-RPC call; when the server is down, restart it once and retry."""
        try:
            return self.rpc.call(method, *params)
        except UiServerDown as exc:
            log.warning("%s: uiautomator server down (%s); restarting it once", self.serial, exc)
            self._restart_ui_server()
            return self.rpc.call(method, *params)

    def _restart_ui_server(self, timeout: float = 20.0) -> None:
        """Launch a fresh server process, as uiautomator2's own client does after a crash."""
        from uiautomator2.core import launch_uiautomator  # heavy import, only for recovery

        self._ensure_jar()
        if self._u2_process is not None:
            self._u2_process.kill()
        self.rpc.close()
        self._u2_process = launch_uiautomator(self._adb, self.ui_port)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.rpc.call("deviceInfo", timeout=2.0)
                return
            except UiServerDown:
                if self._u2_process.pool() is not None:
                    break  # the launched process ended: it will not come up
                time.sleep(0.3)
        raise UiServerDown(f"{self.serial}: the uiautomator server did not come back after a restart")

    def _ensure_jar(self) -> None:
        """Push uiautomator2's server jar when the device lacks it or holds another build."""
        import hashlib

        from uiautomator2.utils import with_package_resource

        with with_package_resource("assets/u2.jar") as jar:
            digest = hashlib.md5(jar.read_bytes()).hexdigest()
            if digest not in self.shell(["toybox", "md5sum", JAR_PATH]).output:
                try:
                    self._adb.sync.push(str(jar), JAR_PATH)
                except (adbutils.AdbError, OSError) as exc:
                    raise UiServerDown(f"{self.serial}: cannot push the uiautomator2 server jar: {exc}") from exc

    def close(self) -> None:
        if self._u2_process is not None:
            self._u2_process.kill()
            self._u2_process = None
        if self._http is not None:
            self._http.close()
        self._http = self._rpc = self._dev = None

    def __enter__(self) -> AdbDevice:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _adb(self) -> adbutils.AdbDevice:
        if self._dev is None:
            raise DeviceOffline(f"{self.serial}: not connected")
        return self._dev

    @property
    def rpc(self) -> JsonRpcClient:
        if self._rpc is None:
            raise DeviceOffline(f"{self.serial}: not connected")
        return self._rpc

    # -- Device protocol -------------------------------------------------------------------
    def shell(self, command: str | Sequence[str], *, timeout: float = 20.0) -> ShellResult:
        """Run a command through shell v2; an argv list is quoted, never spliced.

        stdout and stderr are joined in ``output`` (as ``adb shell`` prints them). A command
        longer than a phone takes raises :class:`~device_farm.errors.CommandTooLong` (the
        caller's error, not the device's) before anything is sent.
        """
        if self._dev is None:
            raise DeviceOffline(f"{self.serial}: not connected")
        text = command if isinstance(command, str) else shlex.join(command)
        if len(text) > CHECK_ABOVE_CHARS:
            check_command(command, text)
        out, err, code = self._host.shell(text, timeout)
        return ShellResult(command=text, output=(out + err).decode("utf-8", "replace"), exit_code=code)

    def screenshot(self) -> bytes:
        """The screen as PNG bytes (``screencap -p``)."""
        png = self._host.exec_out("screencap -p")
        if not png.startswith(b"\x89PNG"):
            raise ShellCommandError("screencap -p", 1, png[:200].decode("utf-8", "replace"))
        return png

    def push(self, data: Payload, remote: str, mode: int = 0o644) -> None:
        """Write ``data`` (bytes or a local file) to ``remote`` over the sync protocol, as
        ``adb push`` does; ``remote`` names the file, never a folder to put it in."""
        content = payload_bytes(data)
        try:
            self._adb.sync.push(content, remote, mode)
        except (adbutils.AdbError, OSError) as exc:
            raise ShellCommandError(f"push {remote}", 1, str(exc)) from exc

    def info(self) -> DeviceInfo:
        data = self.ui_call("deviceInfo")
        return DeviceInfo(
            serial=self.serial,
            model=str(data.get("productName", "")),
            sdk=int(data.get("sdkInt", 0)),
            width=int(data.get("displayWidth", 0)),
            height=int(data.get("displayHeight", 0)),
        )

    def dump_hierarchy(self) -> str:
        return self.ui_call("dumpWindowHierarchy", False, 50)

    def observe(self) -> Screen:
        return parse_hierarchy(self.dump_hierarchy())

    def click(self, x: int, y: int) -> None:
        self.ui_call("click", int(x), int(y))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.3) -> None:
        # uiautomator moves in steps of about 5 ms each
        self.ui_call("swipe", int(x1), int(y1), int(x2), int(y2), max(2, int(seconds * 200)))

    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None:
        """A press held in place: a swipe that does not move (as UiDevice does it)."""
        self.swipe(x, y, x, y, seconds)

    def set_text(self, selector: dict, text: str) -> None:
        """Replace the text of the element matching ``selector`` (a uiautomator selector dict).

        The text travels as JSON to the UI server, never through the device's shell, so quotes,
        metacharacters, newlines and emoji arrive exactly as given.
        """
        self.ui_call("setText", selector, text)

    def press(self, key: str) -> None:
        self.ui_call("pressKey", key)
