"""Maps the service names of OPEN requests to stream handlers on one phone.

`shell:`/`shell,v2,...:`/`exec:` run the shell, `sync:` the file protocol, `tcp:<port>`
bridges to an in-phone listener (port 9008 is the uiautomator2 server) and
`localabstract:<name>` to a service on an abstract unix socket (`uiautomator2` is the same
server). Anything else, or a port or socket nobody listens on, is refused, which the
transport answers with CLSE (the host then reports `closed`, as with a real adbd).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from device_farm.virtual.adbd.stream import AdbStream, StreamHandler
from device_farm.virtual.services.shell_service import ShellService, ShellSpec
from device_farm.virtual.services.sync_service import serve_sync
from device_farm.virtual.shell.session import Command

if TYPE_CHECKING:
    from device_farm.virtual.os.system import AndroidSystem

logger = logging.getLogger(__name__)


class ServiceRouter:
    """Resolves a service name against the phone's current system."""

    def __init__(self, system: Callable[[], "AndroidSystem"], commands: dict[str, Command]) -> None:
        self._system = system
        self._commands = commands

    def resolve(self, service: str) -> StreamHandler | None:
        system = self._system()
        if service.startswith(("shell:", "shell,", "exec:")):
            return ShellService(system, self._commands, ShellSpec.parse(service)).serve
        if service == "sync:":
            fs = system.fs

            async def sync(stream: AdbStream) -> None:
                await serve_sync(fs, stream)

            return sync
        if service.startswith("tcp:"):
            target = service[len("tcp:") :].rpartition(":")[2]
            if not target.isdigit():
                return None
            handler = system.listeners.get(int(target))
            if handler is None:
                logger.info("tcp:%s: nothing listening on the phone", target)
            return handler
        if service.startswith("localabstract:"):
            name = service[len("localabstract:") :]
            handler = system.abstract_sockets.get(name)
            if handler is None:
                logger.info("localabstract:%s: no such socket on the phone", name)
            return handler
        if service.startswith("root:"):
            return self._message("adbd cannot run as root in production builds\n")
        return None

    @staticmethod
    def _message(text: str) -> StreamHandler:
        async def reply(stream: AdbStream) -> None:
            await stream.write(text.encode())

        return reply
