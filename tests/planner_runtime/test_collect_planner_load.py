"""Loading the shared planner never stops a collection: it is loaded once, before the workers
start, and a load that fails is an infra fault for the episode that needed it, retried."""

from __future__ import annotations

import threading
import time

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect, shared
from planner_runtime.contract import TrajectoryStatus
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import builtin_suite

TASKS = [t for t in builtin_suite().tasks if t.id in ("clock.set_alarm", "contacts.add_contact", "settings.wifi_off")]
RACE = "cannot import name 'AutoModelForCausalLM' from 'transformers' (most likely due to a circular import)"


class LazyModel(ScriptedPlanner):
    """A planner that loads its model on first use, as the local one does (and finishes at once)."""

    def __init__(self, failures: int = 0, store=None) -> None:
        super().__init__([])
        self.failures, self.loads, self.store = failures, 0, store
        self.episodes_begun_at_load: list[int] = []
        self._loaded = False

    def load(self) -> None:
        self.loads += 1
        if self.store is not None:
            self.episodes_begun_at_load.append(len(list(self.store.ids())))
        time.sleep(0.05)  # long enough for other threads to pile up on a first use
        if self.loads <= self.failures:
            raise ImportError(RACE)
        self._loaded = True

    def plan(self, messages, tools, *, sampling=None):
        if not self._loaded:
            self.load()
        self._turn = 0  # every episode gets the same one-call script
        return super().plan(messages, tools, sampling=sampling)


@pytest.fixture
def pool(tmp_path):
    with DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as p:
        yield p


def test_a_planner_whose_first_loads_raise_importerror_is_retried_and_the_collection_completes(pool, store):
    model = LazyModel(failures=2)  # the load before the workers fails, and so does the first episode's
    one = shared(model)
    coll, progress = collect(TASKS, pool=pool, store=store, planner_for=lambda t: one, workers=2)
    assert progress.success + progress.failed == len(TASKS) and not progress.gave_up
    assert progress.infra == 1
    trajs = [store.get(i) for i in store.ids()]
    infra = [t for t in trajs if t.status is TrajectoryStatus.infra_error]
    assert len(infra) == 1 and infra[0].verdict.failure_kind == "infra"  # kept, not scored against the planner
    assert sorted(t.item for t in trajs if t.status is TrajectoryStatus.finished) == sorted(f"{t.id}#0" for t in TASKS)
    assert model.loads == 3


def test_the_shared_planner_is_loaded_once_before_any_episode_begins(pool, store):
    model = LazyModel(store=store)
    one = shared(model)
    collect(TASKS, pool=pool, store=store, planner_for=lambda t: one, workers=2, repeat=2)
    assert model.loads == 1 and model.episodes_begun_at_load == [0]


def test_concurrent_first_use_from_many_threads_loads_once():
    model = LazyModel()
    one = shared(model)
    start = threading.Barrier(8)
    answers = []

    def first_use() -> None:
        start.wait()
        answers.append(one.plan([], []).tool_calls[0].name)

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answers == ["finish"] * 8 and model.loads == 1
