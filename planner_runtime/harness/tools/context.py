"""What tools act on during an episode: the guarded device, the safety gate, and the last
screen the planner saw (for element ids and for the changes shown with the next one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from device_farm import Device
from device_farm.android import installed_packages
from device_farm.hierarchy import Screen, diff_screens, parse_hierarchy
from planner_runtime.contract import Observation
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.tools.guard import GuardedDevice


@dataclass
class ToolContext:
    """What tools act on: the device, and the last screen the planner saw."""

    device: Device
    gate: SafetyGate = field(default_factory=SafetyGate)  # deny sensitive actions unless told otherwise
    screen: Screen | None = None
    screen_chars: int = 3000
    # The episode's simulated world (a simulated.world.World), shared with its sub-agents; None:
    # no simulated tools run (a free-form goal), so none is offered.
    world: Any = None
    _installed: set[str] | None = field(default=None, repr=False)
    _shown: Screen | None = field(default=None, repr=False)  # the last screen put in front of the planner

    def __post_init__(self) -> None:
        # tools act through the guard; a context made from another one's device (a sub-agent's)
        # gets its own guard over the same phone
        inner = self.device.inner if isinstance(self.device, GuardedDevice) else self.device
        self.device = GuardedDevice(inner, self)

    def observe(self) -> Screen:
        self.screen = parse_hierarchy(self.device.dump_hierarchy())
        return self.screen

    def observation(self) -> Observation:
        """The current screen as the planner will see it, with what changed since it last saw one."""
        screen = self.screen or self.observe()
        shown, self._shown = self._shown, screen
        if shown is None:
            changes = ""
        else:
            changes = "\n".join(diff_screens(shown, screen)) or "(no change)"
        return Observation(package=screen.package, screen=screen.to_text(self.screen_chars), digest=screen.digest, changes=changes)

    def installed(self, refresh: bool = False) -> set[str]:
        if self._installed is None or refresh:
            self._installed = installed_packages(self.device)
        return self._installed
