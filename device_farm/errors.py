"""Device errors: one root, split by what went wrong, so callers can tell infra faults apart.

Every subclass carries a ``code`` that the harness maps to a Feedback error code, and
``infra`` says whether the device (not the planner) is at fault.
"""

from __future__ import annotations


class DeviceError(Exception):
    """Root of every error raised by device_farm."""

    code = "action_failed"
    infra = True


class DeviceOffline(DeviceError):
    """The device is gone: transport dropped, adb server unreachable, device not listed."""

    code = "device_offline"


class DeviceTimeout(DeviceError):
    """The device did not answer in time."""

    code = "timeout"


class UiServerDown(DeviceError):
    """The on-device uiautomator server is not answering or lost UiAutomation."""

    code = "ui_server_down"


class UiRpcError(DeviceError):
    """The uiautomator server answered with an error for this call (not a transport fault)."""

    code = "action_failed"
    infra = False


class ElementNotFound(UiRpcError):
    """No UI element matched the selector."""

    code = "element_not_found"


class AppNotInstalled(DeviceError):
    """The package is not installed on the device."""

    code = "app_not_installed"
    infra = False


class ShellCommandError(DeviceError):
    """A shell command ran but failed; the device itself is fine."""

    code = "action_failed"
    infra = False

    def __init__(self, command: str, exit_code: int, output: str) -> None:
        self.command, self.exit_code, self.output = command, exit_code, output
        super().__init__(f"{command!r} exited {exit_code}: {output.strip()[:300]}")


class CommandTooLong(DeviceError):
    """A shell command, or one argument of it, is larger than a phone takes. It was refused
    before anything reached the device: the caller's input is at fault and the device is fine,
    so the planner gets ``invalid_arguments`` with the message as its hint."""

    code = "invalid_arguments"
    infra = False


class DeviceUnavailable(DeviceError):
    """No device matching the request could be leased in time (all held, quarantined or gone)."""

    code = "device_offline"


class StorageFull(DeviceError):
    """The device has no room left on /data for the file or app being written."""

    code = "action_failed"
