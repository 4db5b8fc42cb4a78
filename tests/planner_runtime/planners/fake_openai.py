"""A stand-in OpenAI-compatible endpoint on 127.0.0.1 that answers with bytes a test chose.

It is the remote peer of the ``openai`` planner's tests, not the thing under test: each POST
gets the next canned :class:`Reply` — a status and a raw body, so a body can hold what no JSON
encoder writes (``NaN``, 10,000 brackets, a lone ``\\ud800`` escape, bytes that are not UTF-8) —
or a reset connection. Once the replies run out it answers ``finish``. Requests it received are
kept, as bytes, to check what the client sent back.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    reset: bool = False  # close the connection with a TCP reset instead of answering


def _completion(message: str) -> bytes:
    return ('{"choices": [{"index": 0, "finish_reason": "stop", "message": ' + message + "}], "
            '"usage": {"prompt_tokens": 10, "completion_tokens": 5}}').encode("utf-8", errors="surrogatepass")


def call_reply(name: str, arguments: str, *, as_object: bool = False) -> Reply:
    """A 200 answer calling ``name``; ``arguments`` is JSON text put in as written: inside a JSON
    string (as the API sends it) or, with ``as_object``, bare (as some servers send it)."""
    args = arguments if as_object else json.dumps(arguments)  # ensure_ascii: "\ud800" stays an escape
    message = ('{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", '
               f'"function": {{"name": {json.dumps(name)}, "arguments": {args}}}}}]}}')
    return Reply(body=_completion(message))


def text_reply(content_literal: str) -> Reply:
    """A 200 answer whose ``content`` is the JSON string literal given (escapes as written)."""
    return Reply(body=_completion('{"role": "assistant", "content": ' + content_literal + "}"))


def raw_reply(body: bytes, status: int = 200) -> Reply:
    return Reply(status=status, body=body)


FINISH = call_reply("finish", '{"answer": "done"}')


class FakeOpenAI:
    """``with FakeOpenAI(replies) as fake: OpenAIPlanner(fake.base_url, "m")``."""

    def __init__(self, replies: list[Reply] = (), *, then: Reply | None = FINISH) -> None:
        self.replies = list(replies)
        self.then = then
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _next(self) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
            return self.then or Reply(reset=True)

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                fake.requests.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                reply = fake._next()
                if reply.reset:  # SO_LINGER 0: close() sends RST, the client reads "connection reset"
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port_url() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"
