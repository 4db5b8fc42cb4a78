"""AppiumSource: devices behind one Appium server, Selenium/Appium grid or device cloud.

An Appium endpoint does not list its phones the way an adb server does: each device is named
by the capabilities that pick it (``appium:udid``, ``appium:deviceName``, a cloud's own keys),
so a source is one URL plus one capability set per device. :meth:`AppiumSource.discover`
asks the endpoint's ``/status`` whether it takes sessions; :meth:`AppiumSource.open` gives an
:class:`~device_farm.appium.device.AppiumDevice` whose ``connect()`` creates the session. The probe
checks ``/status`` only: a session on a real phone or a cloud device takes seconds to minutes
and may cost money, so battery and storage stay unknown (``None``) for Appium devices.
Several servers are several sources.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

import httpx

from device_farm.appium.device import AppiumDevice
from device_farm.errors import DeviceOffline, DeviceTimeout
from device_farm.health import DeviceHealth
from device_farm.sources import READY, DeviceCandidate

NOT_READY = "not-ready"  # the endpoint answers /status but says it takes no new sessions


def device_name(capabilities: Mapping[str, Any], index: int) -> str:
    """The serial a capability set stands for: its udid, else its device name, else its position."""
    for key in ("appium:udid", "udid", "appium:deviceName", "deviceName"):
        if capabilities.get(key):
            return str(capabilities[key])
    return f"device-{index}"


class AppiumSource:
    """One Appium endpoint and the capability sets of the devices it serves.

    ``capabilities`` is one W3C capability dict or a list of them (one per device; a grid or
    cloud routes each to its phone). ``timeout`` bounds every request of the devices' sessions;
    ``status_timeout`` bounds discovery and probes.
    """

    def __init__(self, url: str, capabilities: Mapping[str, Any] | Iterable[Mapping[str, Any]], *,
                 name: str | None = None, timeout: float = 60.0, status_timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        caps_list = [capabilities] if isinstance(capabilities, Mapping) else list(capabilities)
        self.devices = [(device_name(c, i), dict(c)) for i, c in enumerate(caps_list)]
        names = [n for n, _ in self.devices]
        if len(set(names)) != len(names):
            raise ValueError(f"two capability sets name the same device: {names}")
        self.name = name or f"appium {urlsplit(self.url).netloc}"
        self.timeout, self.status_timeout = timeout, status_timeout

    def start(self) -> None:
        pass  # the Appium server is someone else's

    def close(self) -> None:
        pass

    def status(self) -> dict[str, Any]:
        """The endpoint's ``/status`` value; raises DeviceOffline/DeviceTimeout when it cannot say."""
        try:
            reply = httpx.get(self.url + "/status", timeout=self.status_timeout)
        except httpx.TimeoutException as exc:
            raise DeviceTimeout(f"{self.name}: /status timed out") from exc
        except httpx.HTTPError as exc:
            raise DeviceOffline(f"{self.name} unreachable: {exc}") from exc
        if reply.status_code != 200:
            raise DeviceOffline(f"{self.name}: /status answered HTTP {reply.status_code}")
        try:
            value = reply.json().get("value")
        except ValueError as exc:
            raise DeviceOffline(f"{self.name}: /status is not JSON; is this an Appium server?") from exc
        return value if isinstance(value, dict) else {}

    def _state(self) -> str:
        return READY if self.status().get("ready", True) else NOT_READY

    def discover(self) -> list[DeviceCandidate]:
        state = self._state()
        netloc = urlsplit(self.url).netloc
        return [
            DeviceCandidate(key=f"appium/{netloc}/{serial}", serial=serial, source=self.name, state=state,
                            address=self.url,
                            model=str(caps.get("appium:deviceName") or caps.get("platformName") or ""))
            for serial, caps in self.devices
        ]

    def open(self, candidate: DeviceCandidate) -> AppiumDevice:
        caps = dict(self.devices)[candidate.serial]
        return AppiumDevice(self.url, caps, timeout=self.timeout, serial=candidate.serial)

    def probe(self, candidate: DeviceCandidate) -> DeviceHealth:
        try:
            state = self._state()
        except (DeviceOffline, DeviceTimeout) as exc:
            return DeviceHealth.unreachable("offline", f"{exc.code}: {exc}")
        if state != READY:
            return DeviceHealth.unreachable(state, f"{self.name} takes no new sessions")
        return DeviceHealth(state=READY, ui_ok=True)

    def reconnect(self, candidate: DeviceCandidate) -> bool:
        """Nothing to re-attach on our side: true when the endpoint takes sessions again."""
        try:
            return self._state() == READY
        except (DeviceOffline, DeviceTimeout):
            return False
