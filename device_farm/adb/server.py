"""Start and stop a private adb server: the real ``adb`` binary shipped with adbutils.

Used when the runtime brings up the built-in virtual phone and by the tests: the server gets its
own port and its own HOME (adb writes its key and log under ``$HOME/.android``), so it never
disturbs a user's own adb server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import adbutils

from device_farm.errors import DeviceOffline, DeviceTimeout


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class AdbServer:
    """A private ``adb server nodaemon`` on ``port`` (a free one by default)."""

    def __init__(
        self, port: int | None = None, *, home: Path | None = None, host: str = "127.0.0.1", usb: bool = False
    ) -> None:
        self.host = host
        self.usb = usb
        self.port = port or 0
        self._home = home
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def client(self) -> adbutils.AdbClient:
        return adbutils.AdbClient(host=self.host, port=self.port, socket_timeout=10)

    def start(self, timeout: float = 15.0) -> AdbServer:
        if not self.port:
            self.port = free_port(self.host)
        if self._home is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="planner-agent-adb-")
            self._home = Path(self._tmp.name)
        # ADB_MDNS=0: a private server has no business sending multicast discovery off the host.
        env = dict(os.environ, HOME=str(self._home), ANDROID_USER_HOME=str(self._home / ".android"), ADB_MDNS="0")
        if not self.usb:  # without USB the server answers at once instead of after a ~3 s USB scan
            env["ADB_USB"] = "0"
        env.pop("ANDROID_ADB_SERVER_PORT", None)
        self._proc = subprocess.Popen(
            [adbutils.adb_path(), "-P", str(self.port), "server", "nodaemon"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise DeviceOffline(f"adb server exited with {self._proc.returncode} on port {self.port}")
            # Probe with a bare socket: adbutils' client would spawn a default server on failure.
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise DeviceTimeout(f"adb server on port {self.port} did not answer within {timeout}s")

    def connect_device(self, address: str, timeout: float = 10.0) -> str:
        """``adb connect`` ``address`` and wait until it is listed as ready; returns its serial."""
        self.client.connect(address, timeout=timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for info in self.client.list():
                if info.serial == address and info.state == "device":
                    return address
            time.sleep(0.05)
        raise DeviceTimeout(f"{address} did not come online within {timeout}s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> AdbServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
