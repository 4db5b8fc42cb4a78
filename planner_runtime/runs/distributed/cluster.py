"""Joining a Ray cluster, and where the device hosts' actors go on it.

Ray is an optional extra, imported here and only when ``--ray`` is given: without it a
distributed collection stops at once with the line that installs it. ``--ray`` takes ``auto``
(the cluster this machine belongs to, as ``ray start`` left it), ``local`` (a Ray started in
this process for the run), ``HOST:PORT`` (the head node's address) or ``ray://HOST:PORT`` (Ray
Client). An address nothing listens at is refused before Ray is asked: Ray itself waits on it for
minutes, printing a warning every few seconds.
"""

from __future__ import annotations

import logging
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from planner_runtime.errors import ConfigError

INSTALL = "install the ray extra: pip install 'planner-agent[ray]'"


class RayMissing(ConfigError):
    """``--ray`` was given and Ray is not installed."""


class RayUnreachable(ConfigError):
    """No Ray cluster answers at the address ``--ray`` gave."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`RayMissing` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayMissing(f"--ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` or ``ray://HOST:PORT`` address; ``None`` for the named ones."""
    if address in ("auto", "local"):
        return None
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayUnreachable(f"--ray {address!r}: expected auto, local, HOST:PORT or ray://HOST:PORT")
    return host.strip("[]"), int(port)


def _listening(host: str, port: int, address: str) -> None:
    try:
        socket.create_connection((host, port), timeout=3.0).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise RayUnreachable(f"--ray {address}: no Ray cluster answers there ({why}); start one with "
                             f"`ray start --head` on that host, or pass --ray local to run on this machine") from None


@contextmanager
def ray_session(address: str) -> Iterator[Any]:
    """Ray joined at ``address`` for the block (left again after it, unless it was joined
    before); yields the ``ray`` module."""
    ray = import_ray()
    if ray.is_initialized():  # joined already (a test, a notebook): use that session as it is
        yield ray
        return
    target = _host_port(address)
    if target is not None:
        _listening(*target, address)
    try:
        if address == "local":
            ray.init(include_dashboard=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    except ConnectionError as exc:
        raise RayUnreachable(f"--ray {address}: {exc} (start a cluster with `ray start --head`, "
                             "or pass --ray local to run on this machine)") from None
    try:
        yield ray
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Node:
    """A live node of the cluster, as an actor is pinned to it."""

    id: str
    address: str
    hostname: str


def live_nodes(ray: Any) -> list[Node]:
    """The cluster's live nodes, in the order Ray lists them."""
    return [Node(n["NodeID"], n.get("NodeManagerAddress", ""), n.get("NodeManagerHostname", ""))
            for n in ray.nodes() if n.get("Alive")]


def placement(nodes: list[Node], hosts: int | None) -> list[Node]:
    """The node of each device host's actor: one per node, or ``hosts`` of them dealt round the
    nodes (several on one node share its machine, each with its own phones)."""
    if not nodes:
        raise RayUnreachable("the Ray cluster lists no live node")
    count = len(nodes) if hosts is None else hosts
    return [nodes[i % len(nodes)] for i in range(count)]
