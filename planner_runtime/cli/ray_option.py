"""``--ray ADDRESS`` and ``--ray-hosts N``, the options of the verbs that collect past one host
(``collect``, ``bench``, ``train rl``): the Ray cluster joined for the run and the device hosts started on it,
each building the pool this machine would build from the same options, on its own machine."""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from planner_runtime.errors import ConfigError

RAY_HELP = ("Run on the device hosts of a Ray cluster: auto (the cluster `ray start` joined this machine to), "
            "local (a Ray started for this run), HOST:PORT or ray://HOST:PORT. Needs the ray extra; "
            "-n is then the episodes in parallel on each host.")
RAY_HOSTS_HELP = "With --ray: start this many device hosts, dealt round the cluster's nodes (default: one per node)."


def check_ray_options(ray: str | None, ray_hosts: int | None) -> None:
    if ray_hosts is not None and ray is None:
        raise ConfigError("--ray-hosts needs --ray ADDRESS")


@contextmanager
def ray_farm(address: str, hosts: int | None, adb: Sequence[str] | None, devices: int,
             state_dir: Path | None) -> Iterator:  # Iterator[Farm]
    """The cluster at ``address`` joined for the block, as a
    :class:`~planner_runtime.runs.distributed.Farm` whose hosts each build the pool of ``adb``
    (each address as that host reaches it) or, without, ``devices`` virtual phones."""
    from planner_runtime.cli.devices import pool_from_options
    from planner_runtime.runs.distributed import Farm, ray_session

    with ray_session(address):
        yield Farm(pool=functools.partial(pool_from_options, list(adb or []), 0 if adb else devices, state_dir),
                   workers=devices, hosts=hosts)

