"""``planner-agent serve``: the planner behind an OpenAI-compatible HTTP endpoint.

Routes: ``GET /v1/models``, ``POST /v1/chat/completions`` (``tools``; ``tool_choice`` ``auto``,
``required``, ``none`` or ``{"type": "function", "function": {"name": ...}}``), ``GET /health``.
The stdlib's threading HTTP server handles each connection on its own thread (keep-alive
included), so many harness workers talk to it at once while one :class:`Engine` worker owns the
model and decodes their requests together (a request joins the running batch at the next step). With the embedded planner, ``auto`` and ``required``
behave alike: its answer is constrained to one call of an offered tool. A named tool keeps every
tool in the prompt and constrains the call to that one; ``none`` offers no tools.
"""

from __future__ import annotations

import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from planner_runtime.errors import PlannerError
from planner_runtime.planners import Planner, Sampling
from planner_runtime.serving.batch import PlanRequest
from planner_runtime.serving.engine import Engine
from planner_runtime.serving.wire import openai_to_messages, openai_to_specs, output_to_completion

log = logging.getLogger(__name__)


class RequestError(Exception):
    """A request the server refuses, with the HTTP status to answer."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class PlannerServer:
    """Serves ``planner`` as model ``model_name``; ``port=0`` picks a free port."""

    def __init__(
        self, planner: Planner, *, model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
        max_batch: int = 8, request_timeout_s: float = 300.0,
    ) -> None:
        self.planner = planner
        self.model_name = model_name or getattr(planner, "label", None) or planner.name
        self.host, self.port = host, port
        self.request_timeout_s = request_timeout_s
        self.engine = Engine(planner, max_batch=max_batch)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> PlannerServer:
        """Load the model, bind, and serve on a background thread; returns once listening."""
        self.engine.start()
        handler = type("Handler", (_Handler,), {"server_app": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="planner-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self.engine.stop()

    def __enter__(self) -> PlannerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model_name, "object": "model", "created": 0, "owned_by": "planner-agent"}]}

    def complete(self, body: Any) -> dict[str, Any]:
        request, none = self.parse(body)
        try:
            out = self.engine.submit(request).result(timeout=self.request_timeout_s)
        except PlannerError as exc:
            raise RequestError(503 if self.engine.stopped else 400, str(exc)) from exc
        return output_to_completion(out, model=self.model_name, tool_choice_none=none)

    def parse(self, body: Any) -> tuple[PlanRequest, bool]:
        """A chat-completions body as a :class:`PlanRequest`, and whether tool_choice was ``none``."""
        if not isinstance(body, dict):
            raise RequestError(400, "the body must be a JSON object")
        if body.get("model") not in (None, self.model_name):
            raise RequestError(404, f"The model `{body.get('model')}` does not exist; this server has `{self.model_name}`", "model")
        if body.get("stream"):
            raise RequestError(400, "streaming is not supported", "stream")
        if body.get("n", 1) != 1:
            raise RequestError(400, "only n=1 is supported", "n")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            raise RequestError(400, "messages must be a non-empty list", "messages")
        try:
            messages = openai_to_messages(body["messages"])
            tools = openai_to_specs(body.get("tools") or [])
        except (ValueError, TypeError, AttributeError) as exc:
            raise RequestError(400, f"invalid request: {exc}") from exc
        choice = body.get("tool_choice", "auto" if tools else "none")
        only: tuple[str, ...] | None = None
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
            if name not in {t.name for t in tools}:
                raise RequestError(400, f"tool_choice names {name!r}, which is not among the tools", "tool_choice")
            only = (name,)
        elif choice not in ("auto", "required", "none"):
            raise RequestError(400, f"tool_choice must be auto, required, none or a named function, not {choice!r}", "tool_choice")
        elif choice == "required" and not tools:
            raise RequestError(400, "tool_choice required needs tools", "tool_choice")
        none = choice == "none"
        try:
            sampling = Sampling(
                temperature=float(body.get("temperature") or 0.0),
                top_p=float(body.get("top_p") or 1.0),
                max_new_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens") or 128),
                seed=int(body.get("seed") or 0),
            )
        except (ValueError, TypeError) as exc:
            raise RequestError(400, f"invalid sampling settings: {exc}") from exc
        return PlanRequest(tuple(messages), () if none else tuple(tools), sampling, only), none


class _Handler(BaseHTTPRequestHandler):
    server_app: PlannerServer
    protocol_version = "HTTP/1.1"  # keep-alive: the openai client and httpx reuse connections

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, param: str | None = None) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._send(status, {"error": {"message": message, "type": kind, "param": param, "code": status}})

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self._send(200, self.server_app.models())
        elif path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path != "/v1/chat/completions":
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._error(400, "the body is not JSON")
            return
        try:
            self._send(200, self.server_app.complete(body))
        except RequestError as exc:
            self._error(exc.status, exc.message, exc.param)
        except TimeoutError:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "the planner did not answer in time")
        except Exception as exc:  # a bug in the planner: answer 500 and keep serving
            log.exception("chat completion failed")
            self._error(500, f"internal error: {type(exc).__name__}: {exc}")
