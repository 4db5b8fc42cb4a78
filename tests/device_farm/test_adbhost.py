"""The lean adb host-protocol client: shell v2 exit codes and stderr, clear errors."""

import pytest

from device_farm.adbhost import AdbHost, AdbHostError
from device_farm.adbserver import free_port
from device_farm.errors import DeviceOffline


def test_shell_v2_separates_streams_and_keeps_exit_code(virtual_phone):
    host = AdbHost(virtual_phone.serial, virtual_phone.adb.host, virtual_phone.adb.port)
    out, err, code = host.shell("echo out; nosuchcmd; exit 3")
    assert out == b"out\n" and b"nosuchcmd" in err and code == 3


def test_unknown_serial_is_refused_by_the_server(adb_server):
    with pytest.raises(AdbHostError, match="not found"):
        AdbHost("127.0.0.1:1", adb_server.host, adb_server.port).shell("echo hi")


def test_no_server_is_device_offline():
    with pytest.raises(DeviceOffline, match="unreachable"):
        AdbHost("x", "127.0.0.1", free_port()).shell("echo hi")
