"""Every DeviceError the device layer can raise maps to a Feedback error code, and infra
faults are told apart from the planner's own mistakes."""

from __future__ import annotations

import importlib
import pkgutil

import device_farm
from device_farm.errors import (
    AppNotInstalled, DeviceError, DeviceOffline, DeviceTimeout, DeviceUnavailable, ElementNotFound, ShellCommandError,
    UiServerDown,
)
from planner_runtime.contract import ErrorCode


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _all_subclasses(sub)
    return found


def test_every_device_error_maps_to_a_feedback_code():
    for info in pkgutil.walk_packages(device_farm.__path__, "device_farm."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional backend whose client is not installed
            continue
    # the device layer's own classes: tests elsewhere define backends' codes the contract lacks
    classes = {c for c in _all_subclasses(DeviceError) | {DeviceError} if c.__module__.startswith("device_farm.")}
    assert len(classes) >= 10
    unmapped = {c.__qualname__: c.code for c in classes if c.code not in ErrorCode.__members__}
    assert unmapped == {}


def test_infra_faults_are_apart_from_planner_mistakes():
    assert all(c.infra for c in (DeviceOffline, DeviceTimeout, UiServerDown, DeviceUnavailable))
    assert not any(c.infra for c in (ElementNotFound, AppNotInstalled, ShellCommandError))
    assert DeviceUnavailable.code == ErrorCode.device_offline
