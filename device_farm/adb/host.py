"""A lean client for the adb host protocol (the smart-socket protocol of the adb server).

adbutils is the general client; this module covers the two calls on an agent's hot path —
running a shell command over shell v2 and opening a device socket — without adbutils' per-call
``host:version`` round trip and its 10 ms sleep on close (FACTS.md measured 21.7 ms against
0.57 ms a call). Requests are ``<4 hex digits length><payload>``; answers start ``OKAY`` or
``FAIL<4 hex length><message>``.

Four hex digits carry at most 65535 bytes, and the server turns the service name into one
``OPEN`` packet, which must fit the smallest payload an adb transport negotiates (4 KiB, less
its NUL). A shell command too long for that goes the way ``adb shell < script`` does: the
``shell,v2,raw:`` service with no command starts the device's shell, which reads the command
from stdin (shell v2 stdin packets, then close-stdin). A request that fits no way is refused
with :class:`~device_farm.errors.CommandTooLong` before a byte is sent, so the stream to the
server never loses its framing.
"""

from __future__ import annotations

import socket
import struct

from device_farm.command_size import check_command
from device_farm.errors import CommandTooLong, DeviceOffline, DeviceTimeout

_V2_STDIN, _V2_STDOUT, _V2_STDERR, _V2_EXIT, _V2_CLOSE_STDIN = 0, 1, 2, 3, 4
_V2_HEADER = struct.Struct("<BI")
MAX_REQUEST_BYTES = 0xFFFF
"""What four hex digits of length can announce."""
MAX_INLINE_SERVICE_BYTES = 4096 - 1
"""A service name that fits one OPEN packet on every transport (MAX_PAYLOAD_V1, its NUL included)."""
_SHELL_PREFIX = "shell,v2,raw:"
_INLINE_CHARS = (MAX_INLINE_SERVICE_BYTES - len(_SHELL_PREFIX)) // 4  # surely inline, even all 4-byte UTF-8
_STDIN_CHUNK = 32 * 1024


class AdbHostError(DeviceOffline):
    """The adb server refused a request (device not found, offline, unauthorized...)."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise DeviceOffline("adb server closed the connection")
        buf += chunk
    return bytes(buf)


def _request(sock: socket.socket, payload: str) -> None:
    data = payload.encode("utf-8")
    if len(data) > MAX_REQUEST_BYTES:  # "%04x" would write a fifth digit and desync the stream
        raise CommandTooLong(f"an adb request of {len(data):,} bytes is over the host protocol's "
                             f"{MAX_REQUEST_BYTES:,}: {payload[:60]!r}...")
    sock.sendall(b"%04x" % len(data) + data)
    status = _recv_exact(sock, 4)
    if status == b"OKAY":
        return
    if status == b"FAIL":
        length = int(_recv_exact(sock, 4), 16)
        raise AdbHostError(_recv_exact(sock, length).decode("utf-8", "replace"))
    raise DeviceOffline(f"unexpected adb server reply {status!r}")


def host_query(host: str, port: int, service: str, timeout: float = 5.0) -> str:
    """One adb host-service request answered with a string block (``host:devices-l``,
    ``host-serial:<serial>:get-state``, ``host:connect:<addr>``...)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            _request(sock, service)
            return _recv_exact(sock, int(_recv_exact(sock, 4), 16)).decode("utf-8", "replace")
    except socket.timeout as exc:
        raise DeviceTimeout(f"adb server {host}:{port}: {service} timed out") from exc
    except AdbHostError as exc:
        raise AdbHostError(f"adb server {host}:{port}: {exc}") from exc
    except OSError as exc:
        raise DeviceOffline(f"adb server {host}:{port} unreachable: {exc}") from exc


class AdbHost:
    """Opens device services through one adb server for one device serial."""

    def __init__(self, serial: str, host: str = "127.0.0.1", port: int = 5037) -> None:
        self.serial, self.host, self.port = serial, host, port

    def open(self, service: str, timeout: float = 20.0) -> socket.socket:
        """A socket connected to ``service`` on the device (``shell,v2,raw:...``, ``tcp:9008``...)."""
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except socket.timeout as exc:
            raise DeviceTimeout(f"adb server {self.host}:{self.port} did not accept in {timeout}s") from exc
        except OSError as exc:
            raise DeviceOffline(f"adb server {self.host}:{self.port} unreachable: {exc}") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _request(sock, f"host:transport:{self.serial}")
            _request(sock, service)
        except socket.timeout as exc:
            sock.close()
            raise DeviceTimeout(f"{self.serial}: {service.split(':')[0]} timed out") from exc
        except (OSError, DeviceOffline):
            sock.close()
            raise
        return sock

    def exec_out(self, command: str, timeout: float = 20.0) -> bytes:
        """Raw stdout of ``command`` (the ``exec:`` service: no pty, no line-ending rewrites)."""
        sock = self.open(f"exec:{command}", timeout)
        parts = []
        try:
            while chunk := sock.recv(65536):
                parts.append(chunk)
        except socket.timeout as exc:
            raise DeviceTimeout(f"{self.serial}: exec {command[:60]!r} timed out after {timeout}s") from exc
        except OSError as exc:
            raise DeviceOffline(f"{self.serial}: exec stream broke: {exc}") from exc
        finally:
            sock.close()
        return b"".join(parts)

    def shell(self, command: str, timeout: float = 20.0) -> tuple[bytes, bytes, int]:
        """Run ``command`` with shell v2; return (stdout, stderr, exit code). A command too long
        for a service name is read by the device's shell from stdin instead (same result)."""
        if len(command) > _INLINE_CHARS and len(_SHELL_PREFIX) + len(command.encode()) > MAX_INLINE_SERVICE_BYTES:
            return self._shell_from_stdin(command, timeout)
        sock = self.open(f"{_SHELL_PREFIX}{command}", timeout)
        return self._shell_result(sock, command, timeout)

    def _shell_from_stdin(self, command: str, timeout: float) -> tuple[bytes, bytes, int]:
        """``adb shell < script``: the device's shell reads ``command`` from stdin and exits at
        its end, with the command's status. Its stdin is then at end, not an open pipe."""
        check_command(command, command)
        script = command.encode("utf-8") + b"\n"
        packets = bytearray()
        for start in range(0, len(script), _STDIN_CHUNK):
            chunk = script[start : start + _STDIN_CHUNK]
            packets += _V2_HEADER.pack(_V2_STDIN, len(chunk)) + chunk
        packets += _V2_HEADER.pack(_V2_CLOSE_STDIN, 0)
        sock = self.open(_SHELL_PREFIX, timeout)
        try:
            # All input goes out before any output is read: a shell runs a command only once its
            # line is complete, so a one-command script prints nothing until its input is in.
            sock.sendall(packets)
        except socket.timeout as exc:
            sock.close()
            raise DeviceTimeout(f"{self.serial}: sending a {len(script):,}-byte command timed out after {timeout}s") from exc
        except OSError as exc:
            sock.close()
            raise DeviceOffline(f"{self.serial}: shell stream broke: {exc}") from exc
        return self._shell_result(sock, command, timeout)

    def _shell_result(self, sock: socket.socket, command: str, timeout: float) -> tuple[bytes, bytes, int]:
        """Read a shell v2 stream to its exit packet; the socket is closed at the end."""
        out, err = bytearray(), bytearray()
        try:
            while True:
                kind, length = _V2_HEADER.unpack(_recv_exact(sock, _V2_HEADER.size))
                data = _recv_exact(sock, length) if length else b""
                if kind == _V2_STDOUT:
                    out += data
                elif kind == _V2_STDERR:
                    err += data
                elif kind == _V2_EXIT:
                    return bytes(out), bytes(err), data[0] if data else 0
        except socket.timeout as exc:
            raise DeviceTimeout(f"{self.serial}: shell {command[:60]!r} timed out after {timeout}s") from exc
        except OSError as exc:
            raise DeviceOffline(f"{self.serial}: shell stream broke: {exc}") from exc
        finally:
            sock.close()
