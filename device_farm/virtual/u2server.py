"""placeholder"""
from __future__ import annotations
from typing import Callable
class UiAutomatorServer:
    def __init__(self, system: Callable[[], object]) -> None:
        self._system = system
    async def serve(self, stream) -> None:
        await stream.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong")
