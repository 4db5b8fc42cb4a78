"""What ``planner-agent devices`` shows: every device of a pool with health, holder and faults.

:func:`pool_from_options` turns the command's options into a :class:`DevicePool` (adb servers by
``host:port``, built-in virtual phones); :func:`devices_json` and :func:`devices_table` render
its :meth:`DevicePool.status` rows for scripts and for people.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from rich.table import Table

from device_farm.adb.source import AdbSource
from device_farm.virtual.source import VirtualSource
from device_farm.appium.source import AppiumSource
from device_farm.pool.pool import DevicePool, DeviceStatus
from device_farm.sources import DeviceSource


def pool_from_options(
    adb: Sequence[str],
    virtual: int = 0,
    state_dir: Path | None = None,
    appium: Sequence[tuple[str, dict[str, Any]]] = (),
) -> DevicePool:
    """A pool over the adb servers at ``adb`` (``host:port`` each), Appium endpoints
    (``(url, capabilities)``) and ``virtual`` built-in phones."""
    sources: list[DeviceSource] = [AdbSource(address) for address in adb]
    sources += [AppiumSource(url, caps) for url, caps in appium]
    if virtual:
        sources.append(VirtualSource(virtual))
    return DevicePool(sources, state_dir=state_dir)


def devices_json(rows: Sequence[DeviceStatus], source_errors: dict[str, str], sources: Sequence[DeviceSource]) -> dict[str, Any]:
    return {
        "devices": [row.to_json() for row in rows],
        "sources": [{"name": s.name, "error": source_errors.get(s.name)} for s in sources],
    }


def _health_cell(row: DeviceStatus) -> str:
    h = row.health
    if h is None:
        return "[dim]unknown[/dim]"
    verdict = "[green]ok[/green]" if h.healthy else "[red]" + "; ".join(h.problems) + "[/red]"
    parts = [verdict]
    if h.battery is not None:
        parts.append(f"battery {h.battery}%")
    if h.free_mb is not None:
        parts.append(f"{h.free_mb} MiB free")
    if h.ui_ok is not None:
        parts.append("ui up" if h.ui_ok else "ui down")
    return ", ".join(parts)


def _holder_cell(row: DeviceStatus, now: float) -> str:
    if row.holder is None:
        return "-"
    return f"{row.holder.name} (pid {row.holder.pid}, {now - row.holder.since:.0f}s)"


def _fault_cell(row: DeviceStatus, now: float) -> str:
    r = row.record
    text = f"{r.faults} ({r.consecutive} in a row)" if r.faults else "0"
    if r.quarantined:
        left = r.quarantined_until - now
        text += f" [red]quarantined {left:.0f}s[/red]" if left > 0 else " [yellow]re-probe due[/yellow]"
    return text


def devices_table(rows: Sequence[DeviceStatus]) -> Table:
    now = time.time()
    table = Table()
    table.add_column("device", no_wrap=True)
    for name in ("source", "state", "health", "holder", "faults"):
        table.add_column(name)
    for row in rows:
        c = row.candidate
        table.add_row(f"{c.serial}\n[dim]{c.model or '-'}[/dim]", c.source, c.state, _health_cell(row),
                      _holder_cell(row, now), _fault_cell(row, now))
    return table
