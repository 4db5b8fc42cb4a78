"""Errors of the planner runtime: one root, a few meaningful subclasses.

The model's mistakes never raise: they become :class:`~planner_runtime.contract.Feedback`. These
exceptions are for our own faults, bad configuration and bad input files.
"""

from __future__ import annotations


class PlannerRuntimeError(Exception):
    """Root of every error raised by planner_runtime."""


class ConfigError(PlannerRuntimeError):
    """A setting or command-line value is invalid."""


class ModelProvisionError(PlannerRuntimeError):
    """The embedded planner model could not be found, unpacked or loaded."""


class PlannerError(PlannerRuntimeError):
    """A planner backend failed (not the model's output: that is feedback)."""


class TaskSpecError(PlannerRuntimeError):
    """A task file is invalid; names the file, line and field."""

    def __init__(self, path: str, line: int | None, field: str, message: str) -> None:
        self.path, self.line, self.field, self.message = path, line, field, message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {field}: {message}")


class TaskCheckError(PlannerRuntimeError):
    """A task's check cannot run as the task wrote it: it names a table, column or app the phone
    does not have, its ``where`` makes the provider fail, the phone's ``settings`` refuses its key,
    its file cannot be read. The task is at fault (``FailureKind.spec``), never the planner nor
    the device."""


class StoreError(PlannerRuntimeError):
    """The trajectory store could not be opened or written."""


class StoreNotFound(StoreError):
    """A store that must already exist (one being read) is not there."""
