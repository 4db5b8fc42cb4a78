"""The serving engine: one model, one worker thread, requests decoded together.

HTTP handler threads call :meth:`Engine.submit` and block on a future. For the local planner the
worker runs continuous batching with :class:`~planner_runtime.planners.local.batch.BatchDecoder`: a
request joins the running batch at the next step boundary (up to ``max_batch`` rows at once),
whatever tools it offers, and its future is set the step it ends. When idle, the worker waits
``gather_s`` after a first request for others to start with it. Any other planner (the scripted
one in tests, a remote one behind a proxy, a model whose attention cannot batch) answers the
gathered requests one by one through ``plan``, with the tools' schemas closed as the batch
decoder's grammar closes them.

A caller that stops waiting (its HTTP client went away) calls :meth:`Engine.cancel`: a queued
request is dropped unrun, a decoding one leaves the batch at the next step boundary.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

from planner_runtime.errors import PlannerError
from planner_runtime.planners import Planner, PlannerOutput
from planner_runtime.planners.local.batch import PlanRequest
from planner_runtime.planners.local.grammar import closed_tools

_STOP = object()
log = logging.getLogger(__name__)


class Engine:
    """Owns the planner; ``start()`` launches the worker, ``stop()`` ends it."""

    def __init__(self, planner: Planner, *, max_batch: int = 8, gather_s: float = 0.05) -> None:
        self.planner = planner
        self.max_batch = max_batch
        self.gather_s = gather_s
        self._queue: queue.Queue[Any] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._decoder: Any = None
        self._waiting: dict[int, Future[PlannerOutput]] = {}  # by the decoder's row id
        # requests served in each busy spell (from idle to idle), for tests and the benchmark
        self.batches: list[int] = []
        self.widest = 0  # the most rows one decode step has run
        self._stopped = False
        self._abandoned: set[Future[PlannerOutput]] = set()  # running requests whose callers left
        self._lock = threading.Lock()
        self.cancelled = 0  # requests dropped because their callers left, for tests and logs

    def start(self) -> Engine:
        from planner_runtime.planners.local.planner import LocalPlanner

        if isinstance(self.planner, LocalPlanner):
            from planner_runtime.planners.local.batch import BatchDecoder

            try:
                self._decoder = BatchDecoder(self.planner).load()
            except PlannerError as exc:  # the model cannot batch: serve it one request at a time
                log.warning("serving one request at a time: %s", exc)
        self._worker = threading.Thread(target=self._work, name="planner-engine", daemon=True)
        self._worker.start()
        return self

    @property
    def gives_tokens(self) -> bool:
        """Whether answers can carry their token record (``PlannerOutput.tokens``): the batch
        decoder's when a request asks, or a planner's that always keeps one."""
        return self._decoder is not None or getattr(self.planner, "token_records", False) is True

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called: new requests fail at once."""
        return self._stopped

    def stop(self) -> None:
        """Finish the requests already taken, fail any still queued, then end the worker."""
        self._stopped = True
        if self._worker is not None:
            self._queue.put(_STOP)
            self._worker.join(timeout=30)
            self._worker = None

    def submit(self, request: PlanRequest) -> Future[PlannerOutput]:
        future: Future[PlannerOutput] = Future()
        if self._stopped:
            future.set_exception(PlannerError("the planner is shutting down"))
        else:
            self._queue.put((request, future))
        return future

    def cancel(self, future: Future[PlannerOutput]) -> None:
        """Give up on a submitted request: dropped if still queued, else its row leaves the
        batch at the next step (a planner answering through ``plan`` cannot be interrupted)."""
        if future.cancel():
            with self._lock:
                self.cancelled += 1
            return
        if self._decoder is not None and not future.done():
            with self._lock:
                self._abandoned.add(future)

    def _drop_abandoned(self) -> None:
        with self._lock:
            abandoned, self._abandoned = self._abandoned, set()
        if not abandoned:
            return
        for uid, fut in list(self._waiting.items()):
            if fut in abandoned and self._decoder.cancel(uid):
                del self._waiting[uid]
                fut.set_exception(PlannerError("the request was cancelled: its client went away"))
                with self._lock:
                    self.cancelled += 1

    def _work(self) -> None:
        try:
            self._serve()
        finally:  # whatever is still queued (submitted while stopping) hears that it will not run
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP and item[1].set_running_or_notify_cancel():
                    item[1].set_exception(PlannerError("the planner is shutting down"))

    def _serve(self) -> None:
        stopping = False
        while True:
            busy = self._decoder is not None and self._decoder.live
            if stopping and not busy:
                return
            taken: list[Any] = []
            if not busy and not stopping:  # idle: wait for a request, then briefly for company
                taken.append(self._queue.get())
                deadline = time.monotonic() + self.gather_s
                while taken[-1] is not _STOP and len(taken) < self.max_batch:
                    try:
                        taken.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                    except queue.Empty:
                        break
            else:  # running: whoever is waiting joins at this step boundary
                room = self.max_batch - (self._decoder.live if busy else 0)
                while len(taken) < room and not stopping:
                    try:
                        taken.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
            if _STOP in taken:
                stopping = True
                taken.remove(_STOP)
            live = [(req, fut) for req, fut in taken if fut.set_running_or_notify_cancel()]
            if self._decoder is None:
                if live:
                    self.batches.append(len(live))
                    for req, fut in live:
                        _settle(fut, self._plan_one(req))
                continue
            if live:
                self._admit(live, busy)
            self._drop_abandoned()
            self._step()

    def _admit(self, taken: list[tuple[PlanRequest, Future[PlannerOutput]]], busy: bool) -> None:
        try:
            rows = self._decoder.admit_many([req for req, _ in taken])
        except Exception as exc:  # computing their prompts failed: these requests hear of it
            for _, fut in taken:
                fut.set_exception(exc)
            return
        if not busy or not self.batches:
            self.batches.append(0)
        for (_, fut), row in zip(taken, rows):
            if isinstance(row, PlannerError):  # a bad request fails alone
                fut.set_exception(row)
            else:
                self._waiting[row.uid] = fut
                self.batches[-1] += 1

    def _step(self) -> None:
        if not self._decoder.live:
            return
        self.widest = max(self.widest, self._decoder.live)
        try:
            ended = self._decoder.step()
        except Exception as exc:  # a bug or a model failure: every running request hears of it
            for row in self._decoder.abort():
                _settle(self._waiting.pop(row.uid, None), exc)
            return
        for row, out in ended:
            _settle(self._waiting.pop(row.uid, None), out)

    def _plan_one(self, req: PlanRequest) -> PlannerOutput | Exception:
        tools = closed_tools(req.tools if req.only is None else tuple(t for t in req.tools if t.name in req.only))
        try:
            return self.planner.plan(list(req.messages), list(tools), sampling=req.sampling)
        except Exception as exc:  # noqa: BLE001 - the caller hears of it; the worker goes on
            return exc


def _settle(fut: Future[PlannerOutput] | None, result: PlannerOutput | BaseException) -> None:
    if fut is None:
        return
    if isinstance(result, BaseException):
        fut.set_exception(result)
    else:
        fut.set_result(result)
