"""One translation of device errors into the contract's codes: every backend error is answered
alike, and one whose code the contract does not list is answered too, never crashed on."""

from __future__ import annotations

import importlib
import pkgutil

import device_farm
from device_farm.errors import DeviceError
from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.harness.device_errors import error_code, is_device_fault
from planner_runtime.harness.tools import Tool, ToolContext, ToolResult, ToolSet


class SensorUnsupported(DeviceError):
    """A newer backend's error, with a code the contract has no name for."""

    code = "sensor_unsupported"
    infra = False


class SensorGone(SensorUnsupported):
    infra = True


class ReadSensor(Tool):
    name = "read_sensor"
    description = "Read the phone's light sensor."

    def __init__(self, error: DeviceError) -> None:
        self.error = error

    def run(self, ctx: ToolContext, args: object) -> ToolResult:
        raise self.error


def _every_device_error() -> list[type[DeviceError]]:
    for info in pkgutil.walk_packages(device_farm.__path__, "device_farm."):
        if not info.name.startswith("device_farm.appium"):  # the Appium client is an optional extra
            importlib.import_module(info.name)
    found, todo = [], [DeviceError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in found if c.__module__.startswith("device_farm")]


def test_every_device_farm_error_keeps_its_own_code():
    errors = _every_device_error()
    assert len(errors) > 10
    for cls in errors:
        assert error_code(cls.__new__(cls)) is ErrorCode(cls.code), cls


def test_an_unlisted_code_is_feedback_by_whether_the_device_failed(device):
    assert error_code(SensorUnsupported("no light sensor")) is ErrorCode.action_failed
    assert error_code(SensorGone("sensor bus lost")) is ErrorCode.device_offline
    assert is_device_fault(error_code(SensorGone("x"))) and not is_device_fault(ErrorCode.timeout)
    tools = ToolSet([ReadSensor(SensorUnsupported("this phone has no light sensor"))])
    feedback = tools.execute(ToolCall(name="read_sensor", arguments={}), ToolContext(device=device))
    assert feedback.status is FeedbackStatus.error and feedback.error.code is ErrorCode.action_failed
    assert "no light sensor" in feedback.error.hint
