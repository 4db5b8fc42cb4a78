"""JSON-RPC 2.0 dispatch for the uiautomator2 server, answering malformed calls the way the
real server's jsonrpc4j does: always a JSON-RPC error object on HTTP 200, never a hang-up.

-32700 `JSON parse error` (not JSON or not UTF-8, NaN/Infinity, nested about 1000 deep),
-32600 `invalid request` (not an object, no string `method`, an id that is not a string,
number or null, an empty or oversized batch), -32601 `method not found`, -32602 `method
parameters invalid` (params not an array or object, a number no Java int or double holds such
as `1e999`, or not what the method takes). A batch
(an array of calls) answers an array; a call without an `id` is a notification and answers
nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

logger = logging.getLogger(__name__)

MAX_BATCH = 64
"""Calls one batch may hold; a larger one is refused whole (each call can dump the screen)."""
MAX_ID_DIGITS = 1000


class RpcError(Exception):
    """Answered as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


PARSE_ERROR = (-32700, "JSON parse error")
INVALID_REQUEST = (-32600, "invalid request")
METHOD_NOT_FOUND = (-32601, "method not found")
INVALID_PARAMS = (-32602, "method parameters invalid")
INTERNAL_ERROR = (-32603, "internal error")


@dataclass(frozen=True)
class Dispatcher:
    """Runs calls against `methods` (wire name -> callable); `guard`, when set, is checked
    before each call and raises the RpcError every call answers (UiAutomation gone)."""

    methods: dict[str, Callable[..., Any]]
    guard: Callable[[], None] | None = None

    async def handle(self, body: bytes) -> bytes:
        """The response body for one HTTP request body (empty for notifications only)."""
        try:
            request = _parse(body)
        except RpcError as exc:
            return _dump(_error(None, exc))
        if isinstance(request, list):
            if not request or len(request) > MAX_BATCH:
                detail = f"a batch holds 1 to {MAX_BATCH} calls, not {len(request)}"
                return _dump(_error(None, RpcError(*INVALID_REQUEST, detail)))
            replies = [r for r in [await self._call(item) for item in request] if r is not None]
            return _dump(replies) if replies else b""
        reply = await self._call(request)
        return _dump(reply) if reply is not None else b""

    async def _call(self, request: Any) -> dict[str, Any] | None:
        if not isinstance(request, dict):
            return _error(None, RpcError(*INVALID_REQUEST))
        req_id = request.get("id")
        if not _valid_id(req_id):
            return _error(None, RpcError(*INVALID_REQUEST, "id must be a string, a number or null"))
        notification = "id" not in request
        try:
            result = await self._run(request)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "result": result}
        except RpcError as exc:
            reply = _error(req_id, exc)
        return None if notification else reply

    async def _run(self, request: dict[str, Any]) -> Any:
        method = request.get("method")
        if not isinstance(method, str):
            raise RpcError(*INVALID_REQUEST, "method must be a string")
        params = request.get("params")
        if params is not None and not isinstance(params, (list, dict)):
            raise RpcError(*INVALID_PARAMS, "params must be an array or an object")
        if not _finite(params):
            raise RpcError(*INVALID_PARAMS, f"{method}: a number in params is out of range")
        if self.guard is not None:
            self.guard()
        handler = self.methods.get(method)
        if handler is None:
            raise RpcError(*METHOD_NOT_FOUND, method)
        try:
            if isinstance(params, list):
                result = handler(*params)
            elif isinstance(params, dict):
                result = handler(**params)
            else:
                result = handler()
            if asyncio.iscoroutine(result):
                result = await result
        except RpcError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            # Arguments of the wrong shape or type: Jackson fails to bind them on the phone.
            raise RpcError(*INVALID_PARAMS, f"{method}: {exc}") from exc
        _check_result(method, result)
        return result


def _parse(body: bytes) -> Any:
    def refuse_constant(name: str) -> Any:
        raise ValueError(f"non-standard token {name}")

    try:
        return json.loads(body.decode("utf-8"), parse_constant=refuse_constant)
    # UnicodeDecodeError and JSONDecodeError are ValueErrors; the decoder stops nesting past
    # the interpreter's recursion limit (about Jackson's 1000) with a RecursionError.
    except (ValueError, RecursionError) as exc:
        raise RpcError(*PARSE_ERROR, str(exc)[:200]) from exc


def _valid_id(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return len(str(abs(value))) <= MAX_ID_DIGITS
    return isinstance(value, float) and math.isfinite(value)


def _finite(params: Any) -> bool:
    """Whether every number in ``params`` is finite. JSON has no infinity, but Python reads a
    literal past the double range (``1e999``) as one, where Jackson fails to bind it."""
    stack = [params]
    while stack:  # no recursion: params may nest as deep as the parser allows
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return True


def _check_result(method: str, result: Any) -> None:
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        logger.error("uiautomator2 server: %s returned %r, which is not JSON", method, result)
        raise RpcError(*INTERNAL_ERROR, f"{method}: result is not JSON") from exc


def _error(req_id: Any, exc: RpcError) -> dict[str, Any]:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return {"jsonrpc": "2.0", "id": req_id, "error": error}


def _dump(reply: Any) -> bytes:
    return json.dumps(reply, allow_nan=False).encode()

