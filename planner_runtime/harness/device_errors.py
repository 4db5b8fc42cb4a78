"""The one translation of device errors into what the contract says: error codes and device faults.

``device_farm`` names its faults with a ``code`` string and an ``infra`` flag
(:mod:`device_farm.errors`); the harness answers the planner with an :class:`ErrorCode` from a
closed list. Every place that turns one into the other calls :func:`error_code`, so a backend
with a code the contract does not list (a newer driver's) is answered, not crashed on, and all
callers answer it alike: an infrastructure fault as ``device_offline`` (the device, not the
action, failed), any other as ``action_failed``.
"""

from __future__ import annotations

from device_farm.errors import DeviceError
from planner_runtime.contract import ErrorCode, Feedback

# Codes that say the device itself failed, not the action on it: a fault counted against the
# phone (a pool quarantines it), never against the planner. A timeout is not one of them: the
# planner's endpoint times out too, so it alone does not say whose fault it was.
DEVICE_FAULT_CODES = frozenset({ErrorCode.device_offline, ErrorCode.ui_server_down})
_KNOWN = frozenset(code.value for code in ErrorCode)


def error_code(exc: DeviceError) -> ErrorCode:
    """The contract's code for ``exc``: its own when the contract lists it, else by ``infra``."""
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code in _KNOWN:
        return ErrorCode(code)
    return ErrorCode.device_offline if exc.infra else ErrorCode.action_failed


def device_feedback(call_id: str, exc: DeviceError) -> Feedback:
    """The failed-call feedback for ``exc``, with the error's message (cut) as the hint."""
    return Feedback.fail(call_id, error_code(exc), str(exc)[:300])


def is_device_fault(code: ErrorCode | None) -> bool:
    """Whether a step's error ``code`` says the device itself failed (see ``DEVICE_FAULT_CODES``)."""
    return code in DEVICE_FAULT_CODES
