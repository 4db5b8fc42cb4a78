"""The device as tools see it: every touch, key press, shell command and file push a tool sends
passes the safety gate first, judged by its effect (:mod:`planner_runtime.harness.effects`).

:meth:`ToolSet.execute` opens a scope for each call, naming the tool and the category its own
declaration was allowed for: ``set_location``, once allowed, may tap the Location switch; a
``tap`` on that switch, a composite's step or a tool that forgot to declare itself is asked
about as what it is. Outside a tool call (the harness resetting a phone, a verifier reading it)
nothing is judged.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence

from device_farm import Device, DeviceInfo, Payload, ShellResult
from device_farm.android import foreground
from device_farm.hierarchy import Screen
from planner_runtime.harness.effects import TAP_SLOP, Effect, command_effect, push_effect, submit_effect, touch_effect
from planner_runtime.harness.safety import SafetyGate, Sensitivity
from planner_runtime.harness.tools.errors import Blocked

_ENTER = ("enter", "KEYCODE_ENTER", "66", "ENTER")


class Judged(Protocol):
    """What the guard judges an effect by: the episode's gate and the screen the tool acts on
    (a :class:`~planner_runtime.harness.tools.ToolContext`)."""

    gate: SafetyGate
    screen: Screen | None

    def observe(self) -> Screen: ...


@dataclass(frozen=True)
class Scope:
    tool: str
    arguments: dict[str, Any]
    granted: Sensitivity | None  # the category the tool's own declaration was allowed for


class GuardedDevice:
    """A :class:`~device_farm.Device` whose actions meet the gate inside a tool call."""

    def __init__(self, device: Device, ctx: Judged) -> None:
        self.inner, self._ctx = device, ctx
        self._scopes: list[Scope] = []
        self._typed: str | None = None  # the resource-id last typed into, for Enter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @contextmanager
    def acting_as(self, tool: str, arguments: dict[str, Any], granted: Sensitivity | None) -> Iterator[None]:
        """Judge what happens until the block ends as ``tool``'s doing."""
        self._scopes.append(Scope(tool, arguments, granted))
        try:
            yield
        finally:
            self._scopes.pop()

    def _check(self, effect: Effect | None) -> None:
        if effect is None or not self._scopes:
            return
        scope = self._scopes[-1]
        if effect.category is scope.granted:
            return  # the tool's own declaration was asked about and allowed
        decision = self._ctx.gate.decide(scope.tool, effect.category, {**scope.arguments, "effect": effect.what}, effect.what)
        if not decision.allowed:
            raise Blocked(f"{scope.tool} would {effect.category.value}: {effect.what}; not done: {decision.reason}")

    def _touch(self, x: int, y: int) -> None:
        if self._scopes:
            screen = self._ctx.screen or self._ctx.observe()
            self._check(touch_effect(screen, int(x), int(y), lambda: foreground(self.inner)[1]))

    def _enter(self) -> None:
        if self._scopes:
            self._check(submit_effect(self._ctx.screen or self._ctx.observe(), self._typed))

    # the Device protocol: actions are judged, reads pass through
    @property
    def serial(self) -> str:
        return self.inner.serial

    def connect(self) -> None:
        self.inner.connect()

    def close(self) -> None:
        self.inner.close()

    def info(self) -> DeviceInfo:
        return self.inner.info()

    def dump_hierarchy(self) -> str:
        return self.inner.dump_hierarchy()

    def screenshot(self) -> bytes:
        return self.inner.screenshot()

    def click(self, x: int, y: int) -> None:
        self._touch(x, y)
        self.inner.click(x, y)

    def long_press(self, x: int, y: int, seconds: float = 0.8) -> None:
        self.inner.long_press(x, y, seconds)  # opens menus; the tap on the menu item is the effect

    def swipe(self, x1: int, y1: int, x2: int, y2: int, seconds: float = 0.3) -> None:
        if abs(x2 - x1) <= TAP_SLOP and abs(y2 - y1) <= TAP_SLOP and seconds < 0.5:
            self._touch(x1, y1)  # a swipe that does not move is a tap
        self.inner.swipe(x1, y1, x2, y2, seconds)

    def set_text(self, selector: dict, text: str) -> None:
        self._typed = selector.get("resourceId") if isinstance(selector, dict) else None
        self.inner.set_text(selector, text)

    def press(self, key: str) -> None:
        if key in _ENTER:
            self._enter()
        elif key in ("call", "KEYCODE_CALL", "5") and self._scopes:
            self._check(command_effect(["input", "keyevent", "CALL"]))
        self.inner.press(key)

    def push(self, data: Payload, path: str, mode: int = 0o644) -> None:
        if self._scopes:
            self._check(push_effect(path, lambda: self.inner.shell(["ls", "-d", path]).ok))
        self.inner.push(data, path, mode)

    def shell(self, command: str | Sequence[str], *, timeout: float = 20.0) -> ShellResult:
        if self._scopes:
            argv = command.split() if isinstance(command, str) else list(command)
            if argv[:2] == ["input", "tap"] and len(argv) >= 4 and all(a.lstrip("-").isdigit() for a in argv[2:4]):
                self._touch(int(argv[2]), int(argv[3]))
            elif argv[:2] == ["input", "keyevent"] and any(k in _ENTER for k in argv[2:]):
                self._enter()
            else:
                self._check(command_effect(command))
        return self.inner.shell(command, timeout=timeout)
