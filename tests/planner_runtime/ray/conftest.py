"""A local Ray with 2 CPUs, started once for these tests (the ray extra; skipped without it).

Token authentication, on by default in recent Ray, is turned off for the test cluster so that no
token file is written to the home folder. The device hosts are Ray actors on this one node, so
``--ray-hosts 2`` (``Farm(hosts=2)``) puts two hosts side by side, each with its own phones."""

from __future__ import annotations

from typing import Any, Iterator

import pytest


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_AUTH_MODE", "disabled")  # before init: the workers inherit it
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        try:
            yield ray
        finally:
            ray.shutdown()
