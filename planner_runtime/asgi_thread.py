"""An ASGI app served by uvicorn on a background thread, on a socket the caller bound (so an
address that cannot be bound fails in the caller, and port 0 is known at once): what ``serve``
and ``review serve`` both run. h11 on asyncio, no lifespan, no access log, no server header."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class AsgiThread:
    """``app`` on ``sock``; :meth:`start` returns once listening (``False``: it never came up,
    and it is stopped), :meth:`stop` lets requests in flight finish (5 s at most)."""

    def __init__(self, app: Any, sock: socket.socket, *, name: str, **options: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, http="h11", loop="asyncio", lifespan="off", log_config=None, access_log=False,
                                timeout_graceful_shutdown=5, server_header=False, **options)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)

    def start(self, timeout: float = 30.0) -> bool:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                return False
            time.sleep(0.005)
        return True

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=30)
