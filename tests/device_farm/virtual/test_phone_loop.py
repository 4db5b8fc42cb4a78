"""Many phones on one shared PhoneLoop: each has its own port, serial and state, is driven
through the real adb server, and stops on its own while its neighbours keep serving."""

from __future__ import annotations

import socket
import threading

import pytest

from device_farm.adb.host import AdbHost
from device_farm.virtual import PhoneLoop, VirtualPhone

ALARMS = "content://com.android.deskclock/alarms"


def test_phones_on_one_loop_are_separate_phones(adb_server):
    threads_before = threading.active_count()
    with PhoneLoop() as loop:
        phones = [VirtualPhone().start(loop) for _ in range(4)]
        assert threading.active_count() == threads_before + 1  # one thread for all four
        try:
            hosts = [AdbHost(adb_server.connect_device(p.address), adb_server.host, adb_server.port) for p in phones]
            serials = {h.shell("getprop ro.serialno")[0].decode().strip() for h in hosts}
            assert serials == {p.serial for p in phones}
            hosts[0].shell(f"content insert --uri {ALARMS} --bind hour:i:6 --bind minutes:i:15")
            counts = [h.shell(f"content query --uri {ALARMS}")[0].decode().count("Row:") for h in hosts]
            assert counts == [1, 0, 0, 0]
            phones[1].save_snapshot("clean")
            hosts[1].shell(f"content insert --uri {ALARMS} --bind hour:i:7 --bind minutes:i:0")
            phones[1].restore_snapshot("clean")
            assert "No result found." in hosts[1].shell(f"content query --uri {ALARMS}")[0].decode()

            adb_server.client.disconnect(phones[2].address)
            phones[2].stop()
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", phones[2].port), timeout=2).close()
            assert hosts[3].shell("echo still here")[0] == b"still here\n"
        finally:
            for phone in phones:
                adb_server.client.disconnect(phone.address)
                phone.stop()


def test_a_phone_that_cannot_listen_fails_alone(adb_server):
    with PhoneLoop() as loop:
        first = VirtualPhone().start(loop)
        try:
            with pytest.raises(OSError):
                VirtualPhone(port=first.port).start(loop)  # the port is taken
            host = AdbHost(adb_server.connect_device(first.address), adb_server.host, adb_server.port)
            assert host.shell("echo ok")[0] == b"ok\n"
        finally:
            adb_server.client.disconnect(first.address)
            first.stop()


def test_a_loop_that_is_not_running_refuses_phones():
    with pytest.raises(RuntimeError, match="not running"):
        VirtualPhone().start(PhoneLoop())
