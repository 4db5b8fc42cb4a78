"""Android operations written once over any :class:`~device_farm.Device`: intents, content
providers, launching apps and reading the foreground window.

These use only what a real phone offers through ``adb shell`` (``am``, ``content``, ``monkey``,
``dumpsys``), so app tools and verifiers behave the same on a real phone, an emulator and the
virtual phone. Arguments are passed as argv lists and quoted by the backend, never spliced into
a shell string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from device_farm import Device
from device_farm.errors import AppNotInstalled, ShellCommandError

_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_FIELD_SPLIT = re.compile(r", (?=[A-Za-z_][A-Za-z0-9_]*=)")
_FOCUS = re.compile(r"mCurrentFocus=Window\{\S+ \S+ ([^/\s}]+)/?([^\s}]*)\}")


@dataclass(frozen=True)
class Intent:
    action: str | None = None
    data: str | None = None
    mime_type: str | None = None
    component: str | None = None  # "package/activity"
    categories: tuple[str, ...] = ()
    extras: Mapping[str, Any] | None = None

    def to_am_args(self) -> list[str]:
        args: list[str] = []
        if self.action:
            args += ["-a", self.action]
        if self.data:
            args += ["-d", self.data]
        if self.mime_type:
            args += ["-t", self.mime_type]
        for cat in self.categories:
            args += ["-c", cat]
        if self.component:
            args += ["-n", self.component]
        for key, value in (self.extras or {}).items():
            args += _extra_args(key, value)
        return args


def _extra_args(key: str, value: Any) -> list[str]:
    # bool before int: bool is a subclass of int
    if isinstance(value, bool):
        return ["--ez", key, "true" if value else "false"]
    if isinstance(value, int):
        return ["--ei" if -(2**31) <= value < 2**31 else "--el", key, str(value)]
    if isinstance(value, float):
        return ["--ef", key, repr(value)]
    if isinstance(value, (list, tuple)):
        return ["--esa", key, ",".join(str(v).replace(",", "\\,") for v in value)]
    return ["--es", key, str(value)]


def start_activity(device: Device, intent: Intent) -> str:
    """``am start`` the intent; raises if Android reports an error."""
    result = device.shell(["am", "start", *intent.to_am_args()])
    text = result.output
    if not result.ok or "Error:" in text or "Exception" in text:
        raise ShellCommandError("am start", result.exit_code or 1, text)
    return text


def launch_app(device: Device, package: str) -> None:
    """Start the launcher activity of ``package``, as tapping its icon would."""
    result = device.shell(["monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1"])
    if "No activities found" in result.output or "monkey aborted" in result.output:
        raise AppNotInstalled(f"{package} is not installed")
    if not result.ok:
        raise ShellCommandError("monkey", result.exit_code, result.output)


def installed_packages(device: Device) -> set[str]:
    out = device.shell(["pm", "list", "packages"]).output
    return {line.removeprefix("package:").strip() for line in out.splitlines() if line.startswith("package:")}


def parse_content_rows(text: str, columns: Sequence[str] | None = None) -> list[dict[str, str | None]]:
    """Parse ``content query`` output into dicts, one per row; NULL becomes None.

    Android prints each row as ``Row: N col=value, col=value`` with string values verbatim, so a
    value holding a newline goes on over the next lines and a value may hold ", ". A line opens
    the next row only when it reads ``Row: <the next index> <first column>=`` and, with
    ``columns``, the row before it holds every column (a last "row" that lacks some was a line
    of the last value). With ``columns`` (the projection asked for, in order) a row is cut at
    each ``, <next column>=``: only a value holding the next column's name that way is misread,
    so callers put their free-text column last. Without them a row is cut before every
    ``, name=``, which also cuts a value holding one.
    """
    if "\n" in text and text.count("\r\n") == text.count("\n"):
        text = text.replace("\r\n", "\n")  # a pty's line endings (adb shell v1), not the values'
    lines = text.removesuffix("\n").split("\n")  # only \n ends a line: a value may hold other breaks
    if columns and not any(line.startswith(f"Row: 0 {columns[0]}=") for line in lines):
        columns = None  # the provider did not answer in the projection's order: read the names it printed
    records: list[str] = []
    first = columns[0] if columns else None
    for line in lines:
        head = f"Row: {len(records)} "
        rest = line[len(head):]
        opens = line.startswith(head) and (rest.startswith(f"{first}=") if first else _FIELD_NAME.match(rest) is not None)
        if opens and (not records or columns is None or _known_fields(records[-1], columns) is not None):
            records.append(rest)
            first = first or rest.partition("=")[0]
        elif records:
            records[-1] += "\n" + line
    while columns and len(records) > 1 and _known_fields(records[-1], columns) is None:
        # a "Row: N col=" line inside the last value: what follows it lacks the other columns
        records[-2:] = [f"{records[-2]}\nRow: {len(records) - 1} {records[-1]}"]
    return [_content_fields(record, columns) for record in records]


def _known_fields(record: str, columns: Sequence[str]) -> dict[str, str | None] | None:
    """``col=value, col=value`` read as exactly ``columns`` in order; None when one is missing."""
    if not record.startswith(f"{columns[0]}="):
        return None
    row: dict[str, str | None] = {}
    at = len(columns[0]) + 1
    for name, after in zip(columns, [*columns[1:], None]):
        end = len(record) if after is None else record.find(f", {after}=", at)
        if end < 0:
            return None
        value = record[at:end]
        row[name] = None if value == "NULL" else value
        at = end + len(f", {after}=")
    return row


def _content_fields(record: str, columns: Sequence[str] | None) -> dict[str, str | None]:
    known = _known_fields(record, columns) if columns else None
    if known is not None:
        return known
    pairs = (field.partition("=") for field in _FIELD_SPLIT.split(record))
    return {name: None if value == "NULL" else value for name, _, value in pairs}


def content_query(
    device: Device, uri: str, *, projection: list[str] | None = None, where: str | None = None, sort: str | None = None
) -> list[dict[str, str | None]]:
    args = ["content", "query", "--uri", uri]
    if projection:
        args += ["--projection", ":".join(projection)]
    if where:
        args += ["--where", where]
    if sort:
        args += ["--sort", sort]
    result = device.shell(args)
    if not result.ok or result.output.startswith("Error") or "Exception" in result.output:
        raise ShellCommandError("content query", result.exit_code or 1, result.output)
    return parse_content_rows(result.output, projection)


def content_delete(device: Device, uri: str, *, where: str | None = None) -> None:
    """``content delete``; ``where`` is SQL as the provider reads it, so any value in it must
    already be a quoted literal. Android's ``content`` reports a provider's error on its output
    (and, on some versions, still exits 0), so the output is read as well as the status."""
    args = ["content", "delete", "--uri", uri]
    if where:
        args += ["--where", where]
    result = device.shell(args)
    if not result.ok or "Exception" in result.output or result.output.startswith("Error"):
        raise ShellCommandError("content delete", result.exit_code or 1, result.output)


def _bind(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{name}:b:{'true' if value else 'false'}"
    if isinstance(value, int):
        return f"{name}:i:{value}" if -(2**31) <= value < 2**31 else f"{name}:l:{value}"
    if isinstance(value, float):
        return f"{name}:d:{value!r}"
    if value is None:
        return f"{name}:n:"
    return f"{name}:s:{value}"


def content_insert(device: Device, uri: str, values: Mapping[str, Any]) -> None:
    args = ["content", "insert", "--uri", uri]
    for name, value in values.items():
        args += ["--bind", _bind(name, value)]
    result = device.shell(args)
    if not result.ok or "Exception" in result.output or result.output.startswith("Error"):
        raise ShellCommandError("content insert", result.exit_code or 1, result.output)


def foreground(device: Device) -> tuple[str, str]:
    """(package, activity) of the focused window, from ``dumpsys window``."""
    m = _FOCUS.search(device.shell(["dumpsys", "window"]).output)
    return (m.group(1), m.group(2)) if m else ("", "")


def get_setting(device: Device, namespace: str, key: str) -> str | None:
    """``settings get``; None when the key is unset (Android prints ``null``)."""
    out = device.shell(["settings", "get", namespace, key]).output.strip()
    return None if out == "null" else out


def put_setting(device: Device, namespace: str, key: str, value: str | int | float | bool) -> None:
    text = ("1" if value else "0") if isinstance(value, bool) else str(value)
    result = device.shell(["settings", "put", namespace, key, text])
    if not result.ok:
        raise ShellCommandError("settings put", result.exit_code, result.output)


def clear_app(device: Device, package: str) -> None:
    """``pm clear``: the app's data, as after a fresh install."""
    result = device.shell(["pm", "clear", package])
    if "Success" not in result.output:
        package_path(device, package)  # Android just says "Failed" for a missing package
        raise ShellCommandError("pm clear", result.exit_code or 1, result.output)


def force_stop(device: Device, package: str) -> None:
    device.shell(["am", "force-stop", package])


def package_path(device: Device, package: str) -> str:
    """Where the package's APK lives (``pm path``); raises AppNotInstalled when it has none."""
    out = device.shell(["pm", "path", package]).output.strip()
    if not out.startswith("package:"):
        raise AppNotInstalled(f"{package} is not installed")
    return out.splitlines()[0].removeprefix("package:")
