"""The serving engine: one model, one worker thread, requests gathered into batches.

HTTP handler threads call :meth:`Engine.submit` and block on a future; the worker takes the first
waiting request, gathers whatever else arrives within ``gather_s`` (up to ``max_batch``), and
decodes them together — with :class:`~planner_runtime.serving.batch.BatchDecoder` for the local
planner, or one by one through ``plan`` for any other planner (the scripted one in tests, a
remote one behind a proxy). Requests offered different tools decode in the same batch, each
row attending its own prompt start (see the decoder). Requests that arrive while a batch runs
wait for the next batch.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any

from planner_runtime.errors import PlannerError
from planner_runtime.planners import Planner, PlannerOutput
from planner_runtime.serving.batch import PlanRequest

_STOP = object()


class Engine:
    """Owns the planner; ``start()`` launches the worker, ``stop()`` ends it."""

    def __init__(self, planner: Planner, *, max_batch: int = 8, gather_s: float = 0.05) -> None:
        self.planner = planner
        self.max_batch = max_batch
        self.gather_s = gather_s
        self._queue: queue.Queue[Any] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._decoder: Any = None
        self.batches: list[int] = []  # size of every batch run, for tests and the benchmark

    @property
    def batched(self) -> bool:
        """Whether requests are decoded together (the local planner) or one at a time."""
        from planner_runtime.planners.local import LocalPlanner

        return isinstance(self.planner, LocalPlanner)

    def start(self) -> Engine:
        if self.batched:
            from planner_runtime.serving.batch import BatchDecoder

            self._decoder = BatchDecoder(self.planner).load()  # type: ignore[arg-type]
        self._worker = threading.Thread(target=self._work, name="planner-engine", daemon=True)
        self._worker.start()
        return self

    def stop(self) -> None:
        if self._worker is not None:
            self._queue.put(_STOP)
            self._worker.join(timeout=30)
            self._worker = None

    def submit(self, request: PlanRequest) -> Future[PlannerOutput]:
        future: Future[PlannerOutput] = Future()
        self._queue.put((request, future))
        return future

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get(timeout=self.gather_s)
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            self._run(batch)
            if stop:
                return

    def _run(self, batch: list[tuple[PlanRequest, Future[PlannerOutput]]]) -> None:
        live = [(req, fut) for req, fut in batch if fut.set_running_or_notify_cancel()]
        if not live:
            return
        self.batches.append(len(live))
        try:
            if self._decoder is not None:
                results: list[Any] = self._decoder.decode([req for req, _ in live])
            else:
                results = [self._plan_one(req) for req, _ in live]
        except Exception as exc:  # a bug or a model failure: every caller hears of it
            for _, fut in live:
                fut.set_exception(exc)
            return
        for (_, fut), result in zip(live, results):
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)

    def _plan_one(self, req: PlanRequest) -> PlannerOutput | PlannerError:
        tools = req.tools if req.only is None else tuple(t for t in req.tools if t.name in req.only)
        try:
            return self.planner.plan(list(req.messages), list(tools), sampling=req.sampling)
        except PlannerError as exc:
            return exc
