"""PhoneLoop: one asyncio loop on one thread that serves many virtual phones.

A phone started on its own (``VirtualPhone.start()``) gets a loop and a thread of its own; that
is simplest for one phone, but sixteen phones so started are sixteen threads taking turns at
the interpreter lock, and the switching costs more than the work. Phones started on a shared
``PhoneLoop`` (``phone.start(loop)``) are served by one thread, each on its own port and serial
with its own state, so a process hosting many phones spends its core on serving them. For more
than one core, run phones in several processes (``planner-agent phone serve --count N
--processes P``), each with its own loop.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


class PhoneLoop:
    """A background event loop for phones; construction does no I/O, ``start()`` spawns the thread."""

    def __init__(self, name: str = "virtual-phones") -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> PhoneLoop:
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        ready: Future[None] = Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set_result, None)
            loop.run_forever()
            loop.close()

        self.loop = loop
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        if self.loop is None:
            coro.close()
            raise RuntimeError("the phone loop is not running")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout)

    def stop(self) -> None:
        """Stop the loop; stop its phones first (``phone.stop()``), or they just go silent."""
        if self._thread is None or self.loop is None:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self._thread, self.loop = None, None

    def __enter__(self) -> PhoneLoop:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
