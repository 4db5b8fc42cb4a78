"""The device source over adb: the devices of one adb server (``host:port``).

:class:`AdbSource` lists an adb server's devices with raw host-protocol queries (adbutils'
client would start a default adb server when the one asked for is down, which a farm must not
do), probes health over shell v2 and the uiautomator2 ``/ping``, and re-attaches network
serials with ``adb connect`` after a transport drop. It implements
:class:`device_farm.sources.DeviceSource`, the seam below both the transports and the pool:
this package imports that protocol and never the pool, and the pool never imports a
transport (whoever builds the pool hands it its sources).
"""

from __future__ import annotations

import re
import time

from device_farm import ShellResult
from device_farm.adb.device import UI_SERVER_PORT, AdbDevice, list_states
from device_farm.adb.host import AdbHost, AdbHostError, host_query
from device_farm.errors import DeviceError, DeviceOffline, DeviceTimeout
from device_farm.health import DeviceHealth, HealthPolicy, probe_over_shell
from device_farm.sources import READY, DeviceCandidate

from device_farm.adb.u2rpc import HttpOverStream, JsonRpcClient

_NETWORK_SERIAL = re.compile(r"^[\w.\-\[\]:]+:\d+$")


class _ShellOnly:
    """Just enough of a Device for a health probe: shell v2 through the adb server."""

    def __init__(self, host: AdbHost) -> None:
        self._host = host

    def shell(self, command: str, *, timeout: float = 20.0) -> ShellResult:
        out, err, code = self._host.shell(command, timeout)
        return ShellResult(command=command, output=(out + err).decode("utf-8", "replace"), exit_code=code)


class AdbSource:
    """The devices of one adb server. ``address`` is ``host:port``."""

    def __init__(self, address: str = "127.0.0.1:5037", *, name: str | None = None,
                 policy: HealthPolicy = HealthPolicy()) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.name = name or f"adb {self.host}:{self.port}"
        self.policy = policy
        self._known: dict[str, DeviceCandidate] = {}  # serials seen once stay listed as "missing"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        pass  # the adb server is someone else's

    def close(self) -> None:
        pass

    def _candidate(self, serial: str, state: str, model: str = "") -> DeviceCandidate:
        return DeviceCandidate(key=f"adb/{self.address}/{serial}", serial=serial, source=self.name,
                               state=state, address=self.address, model=model)

    def discover(self) -> list[DeviceCandidate]:
        listed: dict[str, DeviceCandidate] = {}
        for line in host_query(self.host, self.port, "host:devices-l").splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            tags = dict(p.split(":", 1) for p in parts[2:] if ":" in p)
            listed[parts[0]] = self._candidate(parts[0], parts[1], tags.get("model", "").replace("_", " "))
        for serial, known in self._known.items():
            if serial not in listed:
                listed[serial] = self._candidate(serial, "missing", known.model)
        self._known.update({s: c for s, c in listed.items() if c.state != "missing"})
        return sorted(listed.values(), key=lambda c: c.key)

    def state(self, serial: str) -> str:
        """adb's word for the device now. ``get-state`` answers only for a ready device (it
        fails with "device unauthorized...", "device offline"...), so the state of one that is
        not ready is read from the server's list: an unauthorized phone is never called offline."""
        try:
            return host_query(self.host, self.port, f"host-serial:{serial}:get-state", timeout=3).strip()
        except AdbHostError:
            pass
        except (DeviceOffline, DeviceTimeout):  # the server itself did not answer
            return "offline"
        try:
            return list_states(self.host, self.port).get(serial, "missing")
        except DeviceError:
            return "offline"

    def open(self, candidate: DeviceCandidate) -> AdbDevice:
        return AdbDevice(candidate.serial, adb_host=self.host, adb_port=self.port)

    def probe(self, candidate: DeviceCandidate) -> DeviceHealth:
        state = self.state(candidate.serial)
        if state != READY:
            return DeviceHealth.unreachable(state, f"adb state is {state}")
        host = AdbHost(candidate.serial, self.host, self.port)
        http = HttpOverStream(lambda: host.open(f"tcp:{UI_SERVER_PORT}", timeout=3), timeout=3)
        try:
            return probe_over_shell(_ShellOnly(host), state=state, ui_check=lambda: JsonRpcClient(http).ping(),
                                    policy=self.policy)
        finally:
            http.close()

    def reconnect(self, candidate: DeviceCandidate, timeout: float = 3.0) -> bool:
        """Bring ``candidate`` back to ready within about ``timeout``. A network serial is dialled
        again; when the server still lists a stale transport for it (``already connected`` but
        offline), that transport is dropped and dialled once more, since adb would otherwise
        keep the dead one until its own reconnect loop gives up."""
        if not _NETWORK_SERIAL.match(candidate.serial):
            return self._ready_within(candidate.serial, timeout)
        if not self._dial(candidate.serial, timeout / 2):
            return False
        if self._ready_within(candidate.serial, timeout / 2):
            return True
        try:
            host_query(self.host, self.port, f"host:disconnect:{candidate.serial}", timeout=timeout / 2)
        except DeviceError:
            return False
        return self._dial(candidate.serial, timeout / 2) and self._ready_within(candidate.serial, timeout / 2)

    def _dial(self, serial: str, timeout: float) -> bool:
        try:
            answer = host_query(self.host, self.port, f"host:connect:{serial}", timeout=timeout)
        except DeviceError:
            return False
        return "connected to" in answer  # not "failed to connect to ...: Connection refused"

    def _ready_within(self, serial: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if self.state(serial) == READY:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
