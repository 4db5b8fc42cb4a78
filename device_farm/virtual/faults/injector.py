"""Runs fault plans on one phone: counts requests, fires triggers, applies effects.

The phone's adbd calls `on_open` for every service the host opens and its uiautomator2
server calls `on_http` for every HTTP request; both count as requests, in arrival order, and
answer how the fault state changes that request (held during a stall, its connection cut by
a transport drop). Time triggers run on the phone's loop against the phone's clock. Each
fault draws from its own generator, seeded from the plan's seed and its position, so one
plan and seed over the same requests give the same schedule whatever else is armed. All
methods run on the phone's event loop. Every firing is logged and kept as a `FaultEvent`,
so a harness can tell an injected infrastructure fault from a planner's mistake.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from device_farm.virtual.adbd.server import NO_EFFECT, OpenEffect
from device_farm.virtual.os import dialogs
from device_farm.virtual.os.content import ContentUri
from device_farm.virtual.faults.plan import (
    AnrDialog, CrashDialog, Fault, FaultEvent, FaultPlan, NotificationFlood, PermissionDialog,
    Popup, PromptInjection, SlowScreen, Stall, TransportDrop, UiAutomatorCrash,
)
from device_farm.virtual.uiautomator.server import ABSTRACT_SOCKET

if TYPE_CHECKING:
    from device_farm.virtual.os.system import AndroidSystem

logger = logging.getLogger(__name__)

FLOOD_TEXTS = (
    "Your order has shipped", "Weekly summary is ready", "3 new photos were shared with you",
    "Reminder: meeting at 3 pm", "Your code is 482913", "Limited offer: 50% off today",
    "Storage almost full", "New sign-in to your account", "Your ride is arriving",
)


@dataclass
class _Armed:
    index: int
    fault: Fault
    rng: random.Random
    due_clock: float | None = None
    done: bool = False
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


def service_kind(service: str) -> str:
    """`shell,v2,raw:ls` -> shell, `sync:` -> sync, `tcp:9008` -> tcp."""
    return service.split(":", 1)[0].split(",", 1)[0]


class FaultInjector:
    """The fault state of one phone across reboots (its system is looked up on use)."""

    def __init__(self, system: Callable[[], "AndroidSystem"], ui_port: int = 9008) -> None:
        self._system = system
        self._ui_port = ui_port
        self.requests = 0
        self.events: list[FaultEvent] = []
        self._armed: list[_Armed] = []
        self._next_index = 0
        self._stalls: list[tuple[str, float]] = []
        self._drops: list[TransportDrop] = []

    # --- arming --------------------------------------------------------------------
    def arm(self, plan: FaultPlan) -> None:
        """Schedule a plan's faults (added to what is already armed)."""
        loop = asyncio.get_running_loop()
        now = self._system().now()
        for fault in plan.faults:
            armed = _Armed(self._next_index, fault, random.Random(f"{plan.seed}/{self._next_index}"))
            self._next_index += 1
            self._armed.append(armed)
            trigger = fault.trigger
            if trigger.immediate:
                self._fire(armed)
                armed.done = True
            elif trigger.at_time is not None or trigger.within is not None:
                at = trigger.at_time if trigger.at_time is not None else armed.rng.uniform(0, trigger.within or 0)
                armed.due_clock = now + at
                armed.timer = loop.call_later(max(0.0, at), self._on_timer, armed)

    def clear(self) -> None:
        """Forget the armed plan and the running stalls (fault events stay in the log)."""
        for armed in self._armed:
            if armed.timer is not None:
                armed.timer.cancel()
        self._armed, self._stalls, self._drops = [], [], []

    def _on_timer(self, armed: _Armed) -> None:
        armed.timer = None
        if armed.done or armed.due_clock is None:
            return
        remaining = armed.due_clock - self._system().now()
        if remaining > 0.001:  # the phone's clock was set back: wait for it
            armed.timer = asyncio.get_running_loop().call_later(remaining, self._on_timer, armed)
            return
        armed.done = True
        self._fire(armed)

    # --- hooks -----------------------------------------------------------------------
    def on_open(self, service: str) -> OpenEffect:
        """A service was opened on adbd: count it and say what faults do to it."""
        kind = service_kind(service)
        self._request()
        delay = self._stall_delay(kind)
        for drop in self._drops:
            if kind in drop.services:
                self._drops.remove(drop)
                return OpenEffect(delay, drop.after_bytes)
        return OpenEffect(delay) if delay else NO_EFFECT

    def on_http(self, channel: str) -> float:
        """An HTTP request reached the uiautomator2 server: seconds to hold it."""
        self._request()
        return self._stall_delay(channel)

    def _request(self) -> None:
        self.requests += 1
        now = None
        for armed in self._armed:
            if armed.done:
                continue
            trigger = armed.fault.trigger
            if trigger.after_requests is not None and self.requests > trigger.after_requests:
                armed.done = True
                self._fire(armed)
            elif trigger.probability is not None and armed.rng.random() < trigger.probability:
                self._fire(armed)
            elif armed.due_clock is not None:
                now = self._system().now() if now is None else now
                if now >= armed.due_clock:
                    armed.done = True
                    self._fire(armed)
        self._armed = [a for a in self._armed if not a.done]

    def _stall_delay(self, channel: str) -> float:
        if not self._stalls:
            return 0.0
        now = time.monotonic()
        self._stalls = [(s, until) for s, until in self._stalls if until > now]
        return max((until - now for s, until in self._stalls if s in ("any", channel)), default=0.0)

    # --- effects ---------------------------------------------------------------------
    def _fire(self, armed: _Armed) -> None:
        try:
            self._apply(armed)
        except Exception:  # a fault that cannot apply must not take the phone down
            logger.exception("fault %s could not be applied", armed.fault.kind)

    def _apply(self, armed: _Armed) -> None:
        system = self._system()
        fault = armed.fault
        self.events.append(FaultEvent(armed.index, fault.kind, self.requests, system.now()))
        logger.info("virtual phone %s: fault %s fired (request %d)", system.serial, fault.kind, self.requests)
        foreground = system.foreground.package
        if isinstance(fault, TransportDrop):
            self._drops.append(fault)
        elif isinstance(fault, Stall):
            self._stalls.append((fault.service, time.monotonic() + fault.duration))
        elif isinstance(fault, UiAutomatorCrash):
            self._crash_uiautomator(system, fault.mode)
        elif isinstance(fault, SlowScreen):
            system.slow_screen = (fault.delay, time.monotonic() + fault.duration)
        elif isinstance(fault, AnrDialog):
            package = fault.package or foreground
            system.show_dialog(dialogs.anr(package, system.label_of(package)))
        elif isinstance(fault, CrashDialog):
            system.crash_app(fault.package or foreground)
        elif isinstance(fault, PermissionDialog):
            package = fault.package or foreground
            system.show_dialog(dialogs.permission(package, system.label_of(package), fault.permission))
        elif isinstance(fault, Popup):
            package = fault.package or foreground
            system.show_dialog(dialogs.popup(package, system.label_of(package), fault.title,
                                             fault.message, fault.buttons))
        elif isinstance(fault, NotificationFlood):
            for i in range(fault.count):
                system.post_notification(fault.package, f"{fault.title} ({i + 1}/{fault.count})",
                                         armed.rng.choice(FLOOD_TEXTS))
        elif isinstance(fault, PromptInjection):
            self._inject_text(system, fault)

    def _crash_uiautomator(self, system: "AndroidSystem", mode: str) -> None:
        system.ui_automation_connected = False
        if mode == "dead":
            system.listeners.pop(self._ui_port, None)
            system.abstract_sockets.pop(ABSTRACT_SOCKET, None)
            if system.uiautomator_process is not None:
                system.uiautomator_process.set()

    @staticmethod
    def _inject_text(system: "AndroidSystem", fault: PromptInjection) -> None:
        system.post_notification(fault.package, fault.sender, fault.text,
                                 "messages" if fault.channel == "message" else "default")
        sms = system.provider("sms") if fault.channel == "message" else None
        if sms is not None:
            sms.insert(ContentUri.parse("content://sms/inbox"),
                       {"address": fault.sender, "body": fault.text, "date": int(system.now() * 1000),
                        "read": 0, "type": 1})
