"""``planner-agent devices``: every device of a pool with health, holder and faults.

:func:`pool_from_options` turns the command's options into a :class:`DevicePool` (adb servers by
``host:port``, built-in virtual phones); :func:`devices_json` and :func:`devices_table` render
its :meth:`DevicePool.status` rows for scripts and for people.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import typer
from rich.table import Table

from device_farm.pool.pool import DevicePool, DeviceStatus
from device_farm.sources import DeviceSource
from planner_runtime.cli.common import ExitCode, console, err, fail
from planner_runtime.config import Settings, parse_host_port
from planner_runtime.errors import PlannerRuntimeError


def pool_from_options(
    adb: Sequence[str],
    virtual: int = 0,
    state_dir: Path | None = None,
    appium: Sequence[tuple[str, dict[str, Any]]] = (),
) -> DevicePool:
    """A pool over the adb servers at ``adb`` (``host:port`` each), Appium endpoints
    (``(url, capabilities)``) and ``virtual`` built-in phones."""
    # adbutils (under both sources) is imported by the commands that reach a pool, not by every start
    from device_farm.adb.source import AdbSource
    from device_farm.virtual.source import VirtualSource

    sources: list[DeviceSource] = [AdbSource(address) for address in adb]
    if appium:  # selenium (under the Appium client) is imported only when a command asks for Appium phones
        from device_farm.appium.source import AppiumSource

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


def devices(
    adb: Optional[list[str]] = typer.Option(None, "--adb", help="An adb server host:port (repeat for several; default: the configured one)."),
    virtual: int = typer.Option(0, "--virtual", min=0, help="Also start this many built-in virtual phones."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The pool's lock and fault records (default: shared on this host)."),
    appium: Optional[list[str]] = typer.Option(None, "--appium", help="An Appium server URL (repeat for several; capabilities from PLANNER_AGENT_APPIUM_CAPS)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every device with its health, holder and fault counts.

    Exit status: 0 when the listing was made (an unreachable source is reported in it), 2 for a
    usage error, 3 when the devices could not be listed.
    """
    from device_farm.errors import DeviceError

    try:
        settings = Settings.from_env()
        addresses = adb or ([] if virtual or appium else [settings.adb])
        urls = appium or ([settings.appium_url] if settings.appium_url and not adb else [])
        for address in addresses:
            parse_host_port(address)
        pool = pool_from_options(addresses, virtual, state_dir, [(url, settings.appium_caps) for url in urls])
        with pool:
            rows = pool.status()
    except DeviceError as exc:  # say what failed, no traceback wall
        raise fail(f"device: {exc}", ExitCode.infra) from exc
    except PlannerRuntimeError as exc:
        raise fail(str(exc)) from exc
    if as_json:
        print(json.dumps(devices_json(rows, pool.source_errors, pool.sources), indent=2))
        return
    for name, problem in pool.source_errors.items():
        err.print(f"[yellow]{name}: {problem}[/yellow]")
    console.print(devices_table(rows) if rows else "no devices")
