"""A fast client for the on-device uiautomator2 JSON-RPC server, over one kept-alive stream.

Stock clients open a new adb stream per call and write headers and body separately, which
meets Nagle's algorithm and delayed ACKs (~50 ms a call, see FACTS.md). This client keeps one
``tcp:9008`` stream open through the adb server, sets TCP_NODELAY, writes each request in one
send and reads responses by Content-Length (or chunked encoding).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from typing import Any, Callable

from device_farm.errors import DeviceOffline, DeviceTimeout, ElementNotFound, UiRpcError, UiServerDown

_NOT_CONNECTED = ("UiAutomation not connected", "DeadObjectException", "DeadSystemRuntimeException")


_SELECTOR_MASKS = {
    "text": 0x01, "textContains": 0x02, "textMatches": 0x04, "textStartsWith": 0x08,
    "className": 0x10, "classNameMatches": 0x20, "description": 0x40, "descriptionContains": 0x80,
    "descriptionMatches": 0x0100, "descriptionStartsWith": 0x0200, "checkable": 0x0400,
    "checked": 0x0800, "clickable": 0x1000, "longClickable": 0x2000, "scrollable": 0x4000,
    "enabled": 0x8000, "focusable": 0x010000, "focused": 0x020000, "selected": 0x040000,
    "packageName": 0x080000, "packageNameMatches": 0x100000, "resourceId": 0x200000,
    "resourceIdMatches": 0x400000, "index": 0x800000, "instance": 0x01000000,
}


def ui_selector(**fields: Any) -> dict[str, Any]:
    """A uiautomator ``UiSelector`` as the JSON-RPC server expects it (fields plus a mask)."""
    unknown = set(fields) - set(_SELECTOR_MASKS)
    if unknown:
        raise ValueError(f"unknown selector fields: {sorted(unknown)}")
    mask = 0
    for name in fields:
        mask |= _SELECTOR_MASKS[name]
    return {"mask": mask, "childOrSibling": [], "childOrSiblingSelector": [], **fields}


class HttpOverStream:
    """HTTP/1.1 with keep-alive over a socket produced by ``open_socket`` (reopened on demand)."""

    def __init__(self, open_socket: Callable[[], socket.socket], *, timeout: float = 10.0) -> None:
        self._open_socket = open_socket
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock, self._buf = None, b""

    def request(self, method: str, path: str, body: bytes = b"", *, timeout: float | None = None) -> tuple[int, bytes]:
        """Send one request and return (status, body); retries once on a stale kept-alive stream."""
        with self._lock:
            fresh = self._sock is None
            try:
                return self._request_once(method, path, body, timeout)
            except (ConnectionError, _StaleStream, OSError) as exc:
                self.close()
                if fresh or isinstance(exc, socket.timeout):
                    raise
            return self._request_once(method, path, body, timeout)

    def _request_once(self, method: str, path: str, body: bytes, timeout: float | None) -> tuple[int, bytes]:
        if self._sock is None:
            sock = self._open_socket()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock, self._buf = sock, b""
        self._sock.settimeout(timeout or self._timeout)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("ascii")
        self._sock.sendall(head + body)
        status_line, headers = self._read_head()
        status = int(status_line.split()[1])
        if headers.get("transfer-encoding", "").lower() == "chunked":
            payload = self._read_chunked()
        elif "content-length" in headers:
            payload = self._read_exact(int(headers["content-length"]))
        else:  # no length: body runs to the end of the stream
            payload = self._buf + self._read_to_eof()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, payload

    def _fill(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(65536)
        if not chunk:
            raise _StaleStream("stream closed by peer")
        self._buf += chunk

    def _read_head(self) -> tuple[str, dict[str, str]]:
        while b"\r\n\r\n" not in self._buf:
            self._fill()
        raw, self._buf = self._buf.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return lines[0], headers

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            size = int(self._read_line().split(b";")[0], 16)
            if size == 0:
                self._read_line()
                return bytes(out)
            out += self._read_exact(size)
            self._read_line()

    def _read_to_eof(self) -> bytes:
        assert self._sock is not None
        parts = []
        while chunk := self._sock.recv(65536):
            parts.append(chunk)
        return b"".join(parts)


class _StaleStream(ConnectionError):
    pass


class JsonRpcClient:
    """uiautomator2 JSON-RPC calls with errors mapped onto :mod:`device_farm.errors`."""

    def __init__(self, http: HttpOverStream) -> None:
        self._http = http
        self._ids = itertools.count(1)

    def close(self) -> None:
        """Drop the kept-alive stream; the next call opens a new one."""
        self._http.close()

    def ping(self, timeout: float = 3.0) -> bool:
        try:
            status, body = self._http.request("GET", "/ping", timeout=timeout)
        except (OSError, ConnectionError, DeviceOffline, DeviceTimeout):
            return False
        return status == 200 and body.strip() == b"pong"

    def call(self, method: str, *params: Any, timeout: float = 10.0) -> Any:
        payload = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": list(params)}
        try:
            status, body = self._http.request("POST", "/jsonrpc/0", json.dumps(payload).encode(), timeout=timeout)
        except socket.timeout as exc:
            raise DeviceTimeout(f"uiautomator {method} timed out after {timeout}s") from exc
        except (OSError, ConnectionError) as exc:
            raise UiServerDown(f"uiautomator server unreachable during {method}: {exc}") from exc
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise UiServerDown(f"uiautomator server sent non-JSON (HTTP {status}) for {method}") from exc
        if "error" in data:
            err = data["error"] or {}
            message = str(err.get("message", ""))
            if any(marker in message or marker in body.decode("utf-8", "replace") for marker in _NOT_CONNECTED):
                raise UiServerDown(message)
            if "UiObjectNotFoundException" in message:
                raise ElementNotFound(message)
            raise UiRpcError(f"{method}: {err.get('code')} {message}")
        return data.get("result")
