"""The review app's routes (Starlette): pages for people, a small JSON API for scripts.

``GET /`` the queue (``?reason=&status=``); ``GET /next`` leases the reviewer's next item and
redirects to it (``?skip=ID`` gives that one up first); ``GET /items/{id}`` the item page, which
leases the item to the reviewer named by the ``reviewer`` cookie; ``POST /items/{id}/decide``
a decision as a form (then on to the next item) or as JSON; ``GET /api/items``,
``GET /api/items/{id}``, ``POST /api/next`` for scripts. Every request is checked: a body over
64 KiB, a missing or unknown field, a field given twice is a 400 with a message; an unknown item
404; a lease held by someone else, a resolved item or a second review by the same person 409.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qs, quote, unquote, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from planner_runtime.data.review import queue
from planner_runtime.data.review.flags import Reason
from planner_runtime.data.review.errors import AlreadyResolved, AlreadyReviewed, LeaseHeld, ReviewError, UnknownItem
from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.viewer.page import ScreenshotReader, render_trajectory
from planner_runtime.viewer.review import pages

MAX_BODY = 64 * 1024
FIELDS = {"reviewer", "decision", "label", "note", "next_reason"}
LABELS = {"success": True, "failure": False}


class BadRequest(ReviewError):
    """A request the app cannot read: a missing, repeated or malformed field."""


@dataclass
class Reviewing:
    """What the routes work on: the open store, screenshots, the lease length."""

    store: TrajectoryStore
    screenshots: ScreenshotReader | None
    lease_s: float


def _html(text: str, status: int = 200) -> HTMLResponse:
    """A page, with its security policy as a header too (the header binds before any byte is parsed)."""
    return HTMLResponse(text, status_code=status, headers={"Content-Security-Policy": pages.CSP, "X-Content-Type-Options": "nosniff"})


def _status(exc: PlannerRuntimeError) -> int:
    if isinstance(exc, UnknownItem):
        return 404
    if isinstance(exc, (LeaseHeld, AlreadyResolved, AlreadyReviewed)):
        return 409
    return 400 if isinstance(exc, ReviewError) else 500


def _cookie_reviewer(request: Request) -> str:
    return unquote(request.cookies.get("reviewer", "")).strip()[: queue.MAX_NAME]


def _choice(params: Any, name: str, allowed: set[str]) -> str | None:
    value = params.get(name) or None
    if value is not None and value not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(sorted(allowed))}, not {value!r}")
    return value


REASONS = {r.value for r in Reason}


async def _fields(request: Request) -> tuple[dict[str, Any], bool]:
    """The decision's fields from a form or a JSON object, and whether the client speaks JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise BadRequest(f"the body must be at most {MAX_BODY} bytes")
    body = await request.body()
    if len(body) > MAX_BODY:
        raise BadRequest(f"the body must be at most {MAX_BODY} bytes")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not UTF-8") from None
    if kind == "application/json":
        try:
            data = json.loads(text or "null")
        except ValueError as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("the body must be a JSON object")
        return data, True
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("send the decision as application/x-www-form-urlencoded or application/json")
    try:
        parsed = parse_qs(text, keep_blank_values=True, max_num_fields=len(FIELDS) + 4)
    except ValueError as exc:
        raise BadRequest(f"the form cannot be read: {exc}") from None
    twice = sorted(k for k, v in parsed.items() if len(v) > 1)
    if twice:
        raise BadRequest(f"field {twice[0]!r} given more than once")
    return {k: v[0] for k, v in parsed.items()}, False


def _decision_args(data: dict[str, Any]) -> tuple[str, str, bool | None, str]:
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise BadRequest(f"unknown field {unknown[0]!r} (fields: {', '.join(sorted(FIELDS))})")
    for key, value in data.items():
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"field {key!r} must be a string")
    reviewer = (data.get("reviewer") or "").strip()
    if not reviewer:
        raise BadRequest("missing field 'reviewer': type your name at the top of the page")
    decision = data.get("decision") or ""
    if decision not in ("approve", "reject", "relabel"):
        raise BadRequest(f"field 'decision' must be approve, reject or relabel, not {decision!r}" if decision else "missing field 'decision'")
    label: bool | None = None
    if decision == "relabel":
        raw = data.get("label") or ""
        if raw not in LABELS:
            raise BadRequest("relabel needs field 'label': success or failure")
        label = LABELS[raw]
    return reviewer, decision, label, data.get("note") or ""


def app_for(ctx: Reviewing) -> Starlette:
    """The ASGI app of the review queue in ``ctx.store``."""
    store = ctx.store

    def page(render: Callable[[], str], reviewer: str = "") -> Response:
        try:
            return _html(render())
        except PlannerRuntimeError as exc:
            return _html(pages.message("Cannot do that", str(exc), reviewer), _status(exc))

    def home(request: Request) -> Response:
        who = _cookie_reviewer(request)

        def render() -> str:
            reason = _choice(request.query_params, "reason", REASONS)
            status = _choice(request.query_params, "status", set(queue.STATUSES))
            note = "Nothing left for you to review here." if request.query_params.get("done") else ""
            return pages.queue_page(queue.items(store, reason=reason, status=status), reason=reason, status=status,
                                    reviewer=who, note=note)

        return page(render, who)

    def next_item(request: Request) -> Response:
        who = _cookie_reviewer(request)
        try:
            reason = _choice(request.query_params, "reason", REASONS)
            if not who:
                raise BadRequest("type your name in the reviewer field first (it is kept in this browser)")
            skip = request.query_params.get("skip") or ""
            if skip:
                queue.release(store, skip, who)
            found = queue.take(store, who, ctx.lease_s, reason=reason, skip=[skip] if skip else ())
        except PlannerRuntimeError as exc:
            return _html(pages.message("Cannot take an item", str(exc), who), _status(exc))
        if found is None:
            return RedirectResponse("/?" + urlencode({"done": "1", **({"reason": reason} if reason else {})}), status_code=303)
        return RedirectResponse(f"/items/{quote(found.id)}" + (f"?{urlencode({'reason': reason})}" if reason else ""), status_code=303)

    def show_item(request: Request) -> Response:
        who = _cookie_reviewer(request)
        item_id = request.path_params["item_id"]

        def render() -> str:
            reason = _choice(request.query_params, "reason", REASONS)
            item, notice = queue.get(store, item_id), ""
            if item.status == "open":
                if not who:
                    notice = "Type your name in the reviewer field to take this item."
                else:
                    try:
                        item = queue.lease(store, item_id, who, ctx.lease_s)
                    except (LeaseHeld, AlreadyReviewed) as exc:
                        notice = str(exc)
                    except AlreadyResolved:
                        item = queue.get(store, item_id)
            if item.status == "resolved":
                notice = f"Resolved: {item.resolution}."
            traj = store.get(item.trajectory_id)
            family = [traj] + [store.get(child) for child in store.descendants(traj.id)]
            article = "".join(render_trajectory(t, screenshots=ctx.screenshots, usage=store.usage(t.id)) for t in family)
            verifier = traj.verdict.success if traj.verdict is not None else None
            return pages.item_page(item, queue.decisions(store, item_id), article, verifier=verifier, reviewer=who,
                                   notice=notice, reason_filter=reason)

        return page(render, who)

    async def decide(request: Request) -> Response:
        item_id = request.path_params["item_id"]
        as_json = "application/json" in request.headers.get("content-type", "")
        who = _cookie_reviewer(request)
        try:
            data, as_json = await _fields(request)
            reviewer, decision, label, note = _decision_args(data)
            who = reviewer
            reason = _choice(data, "next_reason", REASONS)
            outcome = queue.decide(store, item_id, reviewer, decision, label=label, note=note)
        except PlannerRuntimeError as exc:
            if as_json:
                return JSONResponse({"error": str(exc)}, status_code=_status(exc))
            return _html(pages.message("Decision refused", str(exc), who), _status(exc))
        if as_json:
            return JSONResponse({"item": outcome.item.as_json(), "decision": outcome.decision.as_json(), "resolved": outcome.resolved})
        response = RedirectResponse("/next" + (f"?{urlencode({'reason': reason})}" if reason else ""), status_code=303)
        response.set_cookie("reviewer", quote(reviewer), samesite="strict", httponly=False)
        return response

    def api_items(request: Request) -> Response:
        try:
            reason = _choice(request.query_params, "reason", REASONS)
            status = _choice(request.query_params, "status", set(queue.STATUSES))
            return JSONResponse([i.as_json() for i in queue.items(store, reason=reason, status=status)])
        except PlannerRuntimeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status(exc))

    def api_item(request: Request) -> Response:
        item_id = request.path_params["item_id"]
        try:
            item = queue.get(store, item_id)
            return JSONResponse({"item": item.as_json(), "decisions": [d.as_json() for d in queue.decisions(store, item_id)]})
        except PlannerRuntimeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status(exc))

    async def api_next(request: Request) -> Response:
        try:
            data, _ = await _fields(request)
            reviewer = data.get("reviewer")
            if not isinstance(reviewer, str) or not reviewer.strip():
                raise BadRequest("missing field 'reviewer'")
            reason = _choice(data, "reason", REASONS)
            found = queue.take(store, reviewer, ctx.lease_s, reason=reason)
        except PlannerRuntimeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status(exc))
        return JSONResponse({"item": found.as_json() if found else None})

    def script(_: Request) -> Response:
        return Response(pages.SCRIPT, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    routes = [
        Route("/", home), Route("/next", next_item), Route("/items/{item_id}", show_item),
        Route("/items/{item_id}/decide", decide, methods=["POST"]), Route("/api/items", api_items),
        Route("/api/items/{item_id}", api_item), Route("/api/next", api_next, methods=["POST"]),
        Route("/review.js", script), Route("/health", lambda _: JSONResponse({"ok": True})),
    ]
    return Starlette(routes=routes)
