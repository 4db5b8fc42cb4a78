"""The pool source of built-in virtual phones: N of them behind a private adb server.

:class:`VirtualSource` starts its phones and an adb server of its own, and is otherwise an
:class:`~device_farm.adb.source.AdbSource` over that server, except that it can restore each
phone to the snapshot it took at boot (:class:`~device_farm.sources.CleanSlate`). It lives
with the virtual phone so that the adb package never imports the phone: the arrow runs from
here to ``device_farm.adb``, never back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from device_farm.adb.server import AdbServer
from device_farm.adb.source import AdbSource
from device_farm.errors import DeviceOffline
from device_farm.health import HealthPolicy
from device_farm.sources import DeviceCandidate

if TYPE_CHECKING:
    from device_farm.virtual.phone import VirtualPhone

CLEAN_SNAPSHOT = "clean"  # each virtual phone's state as booted, before anyone used it


class VirtualSource(AdbSource):
    """``count`` built-in virtual phones behind a private adb server, started by ``start()``."""

    def __init__(self, count: int = 1, *, home: Path | None = None, name: str = "virtual",
                 policy: HealthPolicy = HealthPolicy()) -> None:
        super().__init__("127.0.0.1:0", name=name, policy=policy)
        self.count = count
        self._home = home
        self.phones: list[VirtualPhone] = []
        self.server: AdbServer | None = None

    def start(self) -> None:
        # The phone (its apps, shell, renderer) loads here, not when the CLI imports its sources.
        from device_farm.virtual.phone import VirtualPhone

        if self.server is not None:
            return
        if self._home is not None:
            self._home.mkdir(parents=True, exist_ok=True)  # adb aborts when it cannot write $HOME/.android
        self.server = AdbServer(home=self._home).start()
        self.port = self.server.port
        try:
            for _ in range(self.count):
                phone = VirtualPhone().start()
                self.phones.append(phone)
                phone.save_snapshot(CLEAN_SNAPSHOT)
                self.server.connect_device(phone.address)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        for phone in self.phones:
            phone.stop()
        self.phones = []
        if self.server is not None:
            self.server.stop()
            self.server = None

    def restore_clean(self, candidate: DeviceCandidate) -> None:
        """Put the phone back as it booted (a snapshot restore takes about a millisecond; the
        adb connection and the uiautomator2 server stay up)."""
        phone = next((p for p in self.phones if p.address == candidate.serial), None)
        if phone is None:
            raise DeviceOffline(f"{candidate.serial} is not one of this source's virtual phones")
        phone.restore_snapshot(CLEAN_SNAPSHOT)

    def _candidate(self, serial: str, state: str, model: str = "") -> DeviceCandidate:
        return DeviceCandidate(key=f"virtual/{self.address}/{serial}", serial=serial, source=self.name,
                               state=state, address=self.address, model=model)
