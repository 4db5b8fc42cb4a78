"""``planner-agent phone serve``: built-in virtual phones served on adb transports until Ctrl-C."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Optional

import typer

from planner_runtime.cli.common import console, err, fail

phone_app = typer.Typer(help="The built-in virtual phone.", no_args_is_help=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@phone_app.command("serve")
def phone_serve(
    port: int = typer.Option(5555, "--port", min=0, max=65535, help="TCP port for the adb transport (5555-5585 are auto-attached by adb); 0: any free port."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    count: int = typer.Option(1, "--count", "-n", min=1, max=256, help="Serve this many phones (ports PORT, PORT+1, ...)."),
    processes: int = typer.Option(1, "--processes", min=1, help="Spread the phones over this many worker processes (one core each at most)."),
    adb_keys: Optional[list[Path]] = typer.Option(
        None, "--adb-keys", exists=True, help="Require ADB authentication: trust the host keys in this adbkey.pub/adb_keys file or folder (repeat for several)."),
    accept_new_keys: bool = typer.Option(
        False, "--accept-new-keys", help="Require authentication but trust any host that offers its key, as if the user tapped Always allow."),
) -> None:
    """Serve built-in virtual phones until Ctrl-C; then `adb connect 127.0.0.1:PORT`."""
    import threading

    from device_farm.errors import DeviceError
    from device_farm.virtual import PhoneLoop, VirtualPhone
    from device_farm.virtual.adbd.auth import load_keys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the phones as Ctrl-C does
    if port and port + count - 1 > 65535:
        raise fail(f"--port {port} --count {count}: the last phone's port would be {port + count - 1}, above 65535")
    key_files = list(adb_keys) if adb_keys else ([] if accept_new_keys else None)
    if processes > 1:
        return _serve_phone_processes(count, processes, host, port, key_files, accept_new_keys)
    try:  # read once, for every phone
        keys = load_keys(key_files) if key_files is not None else None
    except (DeviceError, OSError, UnicodeDecodeError) as exc:
        raise fail(f"--adb-keys: {exc}") from exc
    loop = PhoneLoop().start()
    phones: list[VirtualPhone] = []
    try:
        for i in range(count):
            at = port + i if port else 0
            phone = VirtualPhone(port=at, host=host, adb_keys=keys, accept_new_keys=accept_new_keys)
            try:
                phones.append(phone.start(loop))  # returns once listening, so the lines below are true when printed
            except OSError as exc:
                raise fail(f"cannot listen on {host}:{at}: {exc}") from exc
        if keys is not None:
            err.print(f"authentication required: {len(keys)} trusted host key(s){', new keys accepted' if accept_new_keys else ''}")
        for phone in phones:
            err.print(f"virtual phone {phone.serial} listening on {host}:{phone.port}; connect with: adb connect {host}:{phone.port}", soft_wrap=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        for phone in phones:
            phone.stop()
        loop.stop()


def _serve_phone_processes(count: int, processes: int, host: str, port: int, keys: list[Path] | None, accept_new_keys: bool) -> None:
    import threading

    from device_farm.virtual.phone_processes import PhoneProcesses, PhoneStartError

    if processes > count:
        raise fail(f"--processes {processes} is more than --count {count}")
    farm = PhoneProcesses(count, processes, host=host, port=port, adb_keys=keys, accept_new_keys=accept_new_keys)
    try:
        with console.status(f"starting {count} phones in {processes} processes"):
            farm.start()
    except PhoneStartError as exc:
        raise fail(str(exc)) from exc
    except KeyboardInterrupt:
        return
    try:
        for phone in farm.phones:
            err.print(f"virtual phone {phone.serial} listening on {phone.address}; connect with: adb connect {phone.address}", soft_wrap=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        farm.stop()
