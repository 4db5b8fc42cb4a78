"""The lean adb host-protocol client: shell v2 exit codes and stderr, long commands, clear errors."""

import pytest

from device_farm.adb.host import AdbHost, AdbHostError, host_query
from device_farm.adb.server import free_port
from device_farm.errors import CommandTooLong, DeviceOffline


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


def test_a_command_too_long_for_a_service_name_keeps_streams_and_exit_code(virtual_phone):
    host = AdbHost(virtual_phone.serial, virtual_phone.adb.host, virtual_phone.adb.port)
    text = "two\nlines 'quoted' \"and\" # more " * 3000  # ~100 KiB: past 4 KiB and 64 KiB alike
    quoted = text.replace("'", "'\"'\"'")
    out, err, code = host.shell(f"echo '{quoted}'; nosuchcmd; exit 3")
    assert out == text.encode() + b"\n" and b"nosuchcmd" in err and code == 3
    assert host.shell("echo ok") == (b"ok\n", b"", 0)


def test_a_request_over_the_host_protocol_limit_is_refused_before_sending(virtual_phone):
    host = AdbHost(virtual_phone.serial, virtual_phone.adb.host, virtual_phone.adb.port)
    with pytest.raises(CommandTooLong, match="host protocol"):
        host.exec_out("echo " + "x" * 70_000)
    with pytest.raises(CommandTooLong, match="host protocol"):
        host_query(virtual_phone.adb.host, virtual_phone.adb.port, "host:" + "y" * 70_000)
    assert host.shell("echo ok") == (b"ok\n", b"", 0)
    assert host.exec_out("echo ok") == b"ok\n"
