"""VirtualPhone: a programmable Android device reachable through the real adb server.

It holds an adbd on loopback TCP, the Android system state and the uiautomator2 server behind
`tcp:9008`, served on an asyncio loop in a background thread: its own with `start()`, or one
shared with other phones with `start(PhoneLoop)`. Construction does no I/O. Its state is observable
only through adb, like a real phone's.
"""

from __future__ import annotations

import logging
from typing import Callable, Coroutine, Iterable, TypeVar

from device_farm.errors import DeviceError
from device_farm.virtual.adbd.auth import AdbPublicKey, KeyRing, KeySource, load_keys
from device_farm.virtual.adbd.server import AdbdServer, make_banner
from device_farm.virtual.apps import default_apps
from device_farm.virtual.faults.injector import FaultInjector
from device_farm.virtual.faults.plan import FaultEvent, FaultPlan, FaultSpec, as_plan
from device_farm.virtual.os.app import App
from device_farm.virtual.os.system import AndroidSystem
from device_farm.virtual.phone_loop import PhoneLoop
from device_farm.virtual.services.router import ServiceRouter
from device_farm.virtual.shell.commands import default_commands
from device_farm.virtual.snapshot import Snapshot, SnapshotError, capture, restore
from device_farm.virtual.uiautomator.server import ABSTRACT_SOCKET, UiAutomatorServer

logger = logging.getLogger(__name__)
T = TypeVar("T")
U2_PORT = 9008


class PhoneNotRunning(DeviceError, RuntimeError):
    """The phone was used before start() or after stop()."""


class VirtualPhone:
    """One virtual phone. Several can run in one process, each with its own port."""

    def __init__(self, port: int = 0, serial: str | None = None, host: str = "127.0.0.1",
                 model: str = "Pixel 7", product: str = "panther",
                 apps: list[Callable[[AndroidSystem], App]] | None = None,
                 uiautomator_running: bool = True, faults: FaultSpec | None = None,
                 adb_keys: KeySource | Iterable[KeySource] | None = None,
                 accept_new_keys: bool = False) -> None:
        """`uiautomator_running`: the uiautomator2 server is up from boot (else it starts
        only through `app_process`, as uiautomator2's client does on a fresh phone).
        `faults`: a FaultPlan (or one fault, or their dict form) armed when the phone starts.
        `adb_keys`: host public keys this phone trusts (an `adbkey.pub`/`adb_keys` file, a
        directory of them, key text, or a list); given, even empty, hosts must authenticate
        (AUTH) before they see the device. `accept_new_keys`: also trust a host that offers an
        unknown key, as if the user tapped "Always allow" (implies authentication)."""
        self.host = host
        self.port = port
        self._serial = serial
        self._model = model
        self._product = product
        self._apps = apps if apps is not None else default_apps()
        self._u2_at_boot = uiautomator_running
        self._host: PhoneLoop | None = None  # the loop it runs on while started
        self._owns_host = False  # started without one: the loop and its thread are the phone's own
        self._server: AdbdServer | None = None
        self._system: AndroidSystem | None = None
        self._u2 = UiAutomatorServer(self._current_system)
        self._snapshots: dict[str, Snapshot] = {}
        self._faults = FaultInjector(self._current_system, U2_PORT)
        self._u2.before_request = self._faults.on_http
        self._plan = as_plan(faults) if faults is not None else None
        self._adb_keys = adb_keys if adb_keys is not None or not accept_new_keys else ()
        self._accept_new_keys = accept_new_keys
        self._keyring: KeyRing | None = None

    @property
    def serial(self) -> str:
        """ro.serialno (known once the port is bound when none was given)."""
        return self._serial or f"virtual-{self.port}"

    @property
    def address(self) -> str:
        """What `adb connect` takes."""
        return f"{self.host}:{self.port}"

    def _current_system(self) -> AndroidSystem:
        if self._system is None:
            raise PhoneNotRunning("the phone is not running")
        return self._system

    def _boot_system(self) -> None:
        if self._system is not None:
            self._system.shutdown()
        system = AndroidSystem(self.serial, self._apps, model=self._model, product=self._product)
        system.uiautomator_handler = self._u2.serve
        if self._u2_at_boot:
            system.listeners[U2_PORT] = self._u2.serve
            system.abstract_sockets[ABSTRACT_SOCKET] = self._u2.serve
        self._system = system

    async def _startup(self) -> None:
        router = ServiceRouter(self._current_system, default_commands())
        self._server = AdbdServer(b"", router.resolve, name=f"{self.host}:{self.port}")
        self._server.on_open = self._faults.on_open
        self._server.keyring = self._keyring
        self.port = await self._server.start(self.host, self.port)
        self._boot_system()
        self._server.banner = make_banner(self._current_system().props)
        if self._plan is not None:
            self._faults.arm(self._plan)
        logger.info("virtual phone %s listening on %s", self.serial, self.address)

    async def _shutdown(self) -> None:
        self._faults.clear()
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._system is not None:
            self._system.shutdown()
            self._system = None
        logger.info("virtual phone %s stopped", self.serial)

    # --- lifecycle -----------------------------------------------------------------
    def start(self, loop: PhoneLoop | None = None) -> "VirtualPhone":
        """Serve on the running ``loop`` shared with other phones, or on a loop and thread of
        its own; returns once listening."""
        if self._host is not None:
            return self
        if self._keyring is None and self._adb_keys is not None:
            # read here, not on the loop that other phones share; once: accepted keys stay trusted
            self._keyring = KeyRing(load_keys(self._adb_keys), self._accept_new_keys)
        own = loop is None
        host = PhoneLoop(name=f"virtual-phone-{self.port}").start() if own else loop
        try:
            host.run(self._startup())
        except BaseException:
            if own:
                host.stop()
            raise
        self._host, self._owns_host = host, own
        return self

    def stop(self) -> None:
        if self._host is None:
            return
        host, self._host = self._host, None
        try:
            host.run(self._shutdown())
        finally:
            if self._owns_host:
                host.stop()

    def __enter__(self) -> "VirtualPhone":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- control -------------------------------------------------------------------
    def call(self, fn: Callable[[], Coroutine[object, object, T]]) -> T:
        """Run a coroutine on the phone's loop and wait for its result."""
        if self._host is None:
            raise PhoneNotRunning("the phone is not running")
        return self._host.run(fn())

    def reset(self) -> None:
        """Factory reset: fresh system state (no alarms, no contacts, empty /sdcard)."""

        async def do() -> None:
            self._boot_system()

        self.call(do)

    # --- snapshots (an emulator's saved states; kept in memory, across reset()) ----------
    def save_snapshot(self, name: str) -> None:
        """Save the whole phone state under `name` (replacing one of that name)."""

        async def do() -> Snapshot:
            return capture(self._current_system(), name)

        self._snapshots[name] = self.call(do)

    def restore_snapshot(self, name: str) -> None:
        """Put the phone back in the state saved as `name`; adb connections stay up."""
        snap = self._snapshots.get(name)
        if snap is None:
            raise SnapshotError(f"no snapshot named {name!r}")

        async def do() -> None:
            restore(self._current_system(), snap)

        self.call(do)

    def trusted_keys(self) -> list[AdbPublicKey]:
        """Host keys this phone trusts now (configured, then accepted); [] without AUTH."""
        return list(self._keyring.keys) if self._keyring is not None else []

    def list_snapshots(self) -> list[str]:
        return sorted(self._snapshots)

    def delete_snapshot(self, name: str) -> None:
        if self._snapshots.pop(name, None) is None:
            raise SnapshotError(f"no snapshot named {name!r}")

    def disconnect_host(self) -> None:
        """Drop every adb connection now (the cable is pulled); the phone keeps listening."""

        async def do() -> None:
            if self._server is not None:
                await self._server.drop_connections()

        self.call(do)

    # --- faults --------------------------------------------------------------------
    def inject(self, faults: FaultSpec, seed: int = 0) -> None:
        """Arm a FaultPlan, one Fault, or their dict form now (added to what is armed).
        A fault without a trigger fires at once; `seed` is for a single fault's draws."""
        plan: FaultPlan = as_plan(faults, seed)

        async def do() -> None:
            self._faults.arm(plan)

        self.call(do)

    def clear_faults(self) -> None:
        """Disarm every scheduled fault and end running stalls; what is on screen stays."""

        async def do() -> None:
            self._faults.clear()

        self.call(do)

    def fault_events(self) -> list[FaultEvent]:
        """Every fault fired so far, in order (kept across reset and snapshot restore)."""

        async def do() -> list[FaultEvent]:
            return list(self._faults.events)

        return self.call(do)
