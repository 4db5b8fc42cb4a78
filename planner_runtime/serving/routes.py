"""The Starlette application of :class:`~planner_runtime.serving.server.PlannerServer`: its routes
and the API's error bodies (``{"error": {"message", "type", "param", "code"}}``) for every refusal,
unknown routes and methods included.

The routes see the server through :class:`Served`, what they call on it, so this module sits
below ``server`` (which builds the app) and never imports it."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, AsyncIterator, Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from planner_runtime.planners import PlannerOutput
from planner_runtime.serving.engine import Engine
from planner_runtime.serving.requests import ChatRequest, ClientGone, RequestError

log = logging.getLogger(__name__)


class Served(Protocol):
    """What the routes call on the server (:class:`~planner_runtime.serving.server.PlannerServer`)."""

    engine: Engine
    model_ids: tuple[str, ...]

    async def read_chat(self, request: Any) -> ChatRequest: ...

    def stream(self, request: Any, chat: ChatRequest) -> AsyncIterator[str]: ...

    async def answer(self, request: Any, future: Future[PlannerOutput]) -> PlannerOutput: ...

    def completion(self, chat: ChatRequest, out: PlannerOutput, head: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def models(self) -> dict[str, Any]: ...

    def model_card(self, model_id: str) -> dict[str, Any]: ...


def error_response(exc: RequestError) -> JSONResponse:
    # A body left unread (413, 415) must not be taken for the next request on this connection.
    headers = {"Connection": "close"} if exc.status in (408, 413, 415) else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


def app_for(server: Served) -> Starlette:
    """The ASGI app serving ``server``'s engine."""

    async def chat_completions(request: Request) -> Response:
        try:
            chat = await server.read_chat(request)
            if chat.stream:  # submitted once the stream starts: a stream never started asks nothing of the engine
                headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
                return StreamingResponse(server.stream(request, chat), media_type="text/event-stream", headers=headers)
            out = await server.answer(request, server.engine.submit(chat.plan))
            return JSONResponse(server.completion(chat, out))
        except RequestError as exc:
            return error_response(exc)
        except ClientGone:
            return Response(status_code=499)  # nobody reads it; uvicorn drops it on the closed connection
        except Exception as exc:  # a bug in the planner: answer 500 and keep serving
            log.exception("chat completion failed")
            return error_response(RequestError(500, f"internal error: {type(exc).__name__}: {exc}"))

    async def models(request: Request) -> Response:
        return JSONResponse(server.models())

    async def model(request: Request) -> Response:
        model_id = request.path_params["model"]
        if model_id not in server.model_ids:
            return error_response(RequestError(404, f"The model `{model_id}` does not exist", "model", "model_not_found"))
        return JSONResponse(server.model_card(model_id))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def http_error(request: Request, exc: Any) -> Response:
        message = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
        status = getattr(exc, "status_code", 500)
        response = error_response(RequestError(status, message.get(status, str(getattr(exc, "detail", exc)))))
        if status == 405 and getattr(exc, "headers", None):
            response.headers.update(exc.headers)
        return response

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{model:path}", model, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})
