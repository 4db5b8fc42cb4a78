"""Phones spread over worker processes: each reachable through the real adb server with its own
serial and state; a port in use fails the start with no worker left behind; workers whose parent
is killed stop their phones instead of outliving it."""

from __future__ import annotations

import json
import multiprocessing
import signal
import socket
import subprocess
import sys
import time

import pytest

from device_farm.adb.host import AdbHost
from device_farm.virtual.phone_processes import PhoneProcesses, PhoneStartError

ALARMS = "content://com.android.deskclock/alarms"


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_phones_in_two_processes(adb_server):
    with PhoneProcesses(count=4, processes=2) as farm:
        assert len(farm.phones) == 4 and len({p.serial for p in farm.phones}) == 4
        hosts = [AdbHost(adb_server.connect_device(p.address), adb_server.host, adb_server.port) for p in farm.phones]
        try:
            assert [h.shell("getprop ro.serialno")[0].decode().strip() for h in hosts] == [p.serial for p in farm.phones]
            hosts[3].shell(f"content insert --uri {ALARMS} --bind hour:i:6 --bind minutes:i:15")
            assert [h.shell(f"content query --uri {ALARMS}")[0].decode().count("Row:") for h in hosts] == [0, 0, 0, 1]
        finally:
            for p in farm.phones:
                adb_server.client.disconnect(p.address)
        ports = [p.port for p in farm.phones]
    assert not any(listening(port) for port in ports)


def test_a_taken_port_fails_the_start_and_leaves_no_worker():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        farm = PhoneProcesses(count=2, processes=2, port=port)  # the first phone's port is taken
        with pytest.raises(PhoneStartError, match="(?i)address already in use|Errno 98"):
            farm.start()
        assert farm._workers == [] and multiprocessing.active_children() == []


def test_workers_stop_their_phones_when_the_parent_is_killed(tmp_path):
    script = (
        "import json, sys, time\n"
        "from device_farm.virtual.phone_processes import PhoneProcesses\n"
        "farm = PhoneProcesses(count=2, processes=2).start()\n"
        "print(json.dumps([p.port for p in farm.phones]), flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        ports = json.loads(proc.stdout.readline())
        assert all(listening(port) for port in ports)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    deadline = time.monotonic() + 10
    while any(listening(port) for port in ports) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(listening(port) for port in ports)


def test_more_processes_than_phones_is_refused():
    with pytest.raises(ValueError, match="processes must be 1..2"):
        PhoneProcesses(count=2, processes=3)


def test_workers_require_auth_with_the_key_files_given(tmp_path):
    from device_farm.adb.server import AdbServer
    from device_farm.virtual.adbd.packets import A_AUTH, A_CNXN, A_VERSION, Packet
    from tests.device_farm.virtual.raw_adb import RawAdb, keygen

    pub = keygen(tmp_path / "home" / ".android" / "adbkey")
    with AdbServer(home=tmp_path / "home") as server, PhoneProcesses(count=2, processes=1, adb_keys=[pub]) as farm:
        for phone in farm.phones:
            with RawAdb(phone, handshake=False) as raw:  # a host with no key is asked for AUTH
                raw.send(Packet(A_CNXN, A_VERSION, 4096, b"host::\x00"))
                assert raw.recv().command == A_AUTH
            serial = server.connect_device(phone.address)
            assert server.client.device(serial).shell("echo trusted") == "trusted"
    (tmp_path / "adb_keys").write_text("garbage\n")
    with pytest.raises(PhoneStartError, match="BadAdbKey"):
        PhoneProcesses(count=1, processes=1, adb_keys=[tmp_path / "adb_keys"]).start()
    assert multiprocessing.active_children() == []
