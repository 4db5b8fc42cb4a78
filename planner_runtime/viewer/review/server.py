"""``planner-agent review serve``: the review app on uvicorn, in a background thread.

The app has no login, so it listens on a loopback address unless the caller says otherwise
(``allow_remote``). Like :class:`~planner_runtime.serving.server.PlannerServer` the socket is
bound before the server thread starts, so an address in use is an :class:`OSError` for the
caller, and ``port=0`` picks a free port.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

from planner_runtime.asgi_thread import AsgiThread
from planner_runtime.errors import ConfigError, PlannerRuntimeError, StoreError
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.viewer.page import ScreenshotReader
from planner_runtime.viewer.review.app import Reviewing, app_for

LEASE_S = 300.0  # an item opened in the browser is the reviewer's for five minutes


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def screenshot_reader(root: Path | None) -> ScreenshotReader | None:
    """Screenshots from the artifact store under ``root`` (else the configured one)."""
    from planner_runtime.trajectories.artifacts import ArtifactStore

    artifacts = ArtifactStore(root) if root is not None else ArtifactStore.default()

    def read(ref: str) -> tuple[bytes, str] | None:
        try:
            return artifacts.get(ref), artifacts.media_type(ref)
        except PlannerRuntimeError:
            return None

    return read


class ReviewServer:
    """Serves the review queue of the store at ``store_path`` (which must exist)."""

    def __init__(self, store_path: Path, *, host: str = "127.0.0.1", port: int = 0, artifacts: Path | None = None,
                 lease_s: float = LEASE_S, allow_remote: bool = False) -> None:
        self.store_path, self.host, self.port = Path(store_path), host, port
        self.artifacts, self.lease_s, self.allow_remote = artifacts, lease_s, allow_remote
        self._store: TrajectoryStore | None = None
        self._http: AsgiThread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ReviewServer:
        """Open the store, bind and serve; returns once listening."""
        if not self.allow_remote and not is_loopback(self.host):
            raise ConfigError(f"--host {self.host}: not a loopback address; the review app has no login, "
                              "so pass --allow-remote to serve it to the network anyway")
        if not self.lease_s > 0:
            raise ConfigError(f"--lease must be more than 0 seconds, not {self.lease_s}")
        self._store = TrajectoryStore(self.store_path, create=False).open()
        try:
            sock = socket.create_server((self.host, self.port))
        except BaseException:
            self._store.close()
            raise
        self.port = sock.getsockname()[1]
        app = app_for(Reviewing(self._store, screenshot_reader(self.artifacts), self.lease_s))
        self._http = AsgiThread(app, sock, name="review-http")
        if not self._http.start():
            self.stop()
            raise StoreError(f"the review app on {self.host}:{self.port} did not start")
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.stop()
            self._http = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
