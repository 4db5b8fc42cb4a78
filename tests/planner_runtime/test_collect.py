"""Collection over a pool of virtual phones: parallel, infra failures retried elsewhere, resumable."""

from __future__ import annotations

import re

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect
from planner_runtime.contract import TrajectoryStatus
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.tasks.spec import builtin_suite

SCRIPTS = {
    "clock.set_alarm": [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}],
    "contacts.add_contact": [{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}],
    "clock.disable_alarm_gui": [{"name": "skill_clock_alarm_off", "arguments": {"time": "6:15"}}],
    "contacts.lookup_number": [{"name": "skill_contacts_lookup", "arguments": {"name": "Grace Hopper"}}],
}
ANSWERS = {"contacts.lookup_number": "+1 555 0199"}
TASKS = [t for t in builtin_suite().tasks if t.id in SCRIPTS]


def calls_for(task):
    """The script of ``task``'s template; the alarm-off template draws its alarm per seed."""
    listed = task.id.split("@")[0]
    if listed == "clock.disable_alarm_gui":
        return [{"name": "skill_clock_alarm_off", "arguments": {"time": f"{task.params['hour']}:{task.params['minute']:02d}"}}]
    return SCRIPTS[listed]


def solver(task):
    finish = {"name": "finish", "arguments": {"answer": ANSWERS.get(task.id, "done")}}
    return ScriptedPlanner(calls_for(task) + [finish])


@pytest.fixture
def pool(tmp_path):
    with DevicePool([VirtualSource(3)], state_dir=tmp_path / "pool") as p:
        yield p


def _trajectories(store, collection):
    return [store.get(i) for i in store.ids() if store.get(i).collection == collection]


def test_collects_every_item_in_parallel_and_resumes(pool, store):
    seen = []
    coll, progress = collect(TASKS, pool=pool, store=store, planner_for=solver, workers=3, repeat=2,
                             on_change=lambda p: seen.append(p.done))
    assert (progress.total, progress.success, progress.failed, progress.infra) == (8, 8, 0, 0)
    trajs = _trajectories(store, coll)
    assert sorted(t.item for t in trajs) == sorted(f"{t.id}#{r}" for t in TASKS for r in range(2))
    assert len({t.device.serial for t in trajs}) > 1  # spread over the pool
    assert seen[-1] == 8

    again, more = collect(TASKS, pool=pool, store=store, planner_for=solver, workers=3, repeat=3, collection=coll)
    assert again == coll and (more.skipped, more.success) == (8, 4)
    assert len(_trajectories(store, coll)) == 12


def test_an_infra_failure_is_kept_and_the_item_retried_on_another_device(pool, store):
    phones = pool.sources[0].phones
    dropped = []

    class DropsTheCable(ScriptedPlanner):
        def plan(self, messages, tools, *, sampling=None):
            if not dropped:  # the phone this episode runs on dies (a retry cannot help)
                held = next(row.candidate.serial for row in pool.status() if row.holder is not None)
                phone = next(p for p in phones if held.endswith(f":{p.port}"))
                dropped.append(phone.serial)
                phone.stop()
            return super().plan(messages, tools, sampling=sampling)

    first = TASKS[0]

    def planner_for(task):
        if task.id == first.id and not dropped:
            return DropsTheCable(calls_for(task) + [{"name": "finish", "arguments": {"answer": "ok"}}])
        return solver(task)

    coll, progress = collect(TASKS, pool=pool, store=store, planner_for=planner_for, workers=1, repeat=1)
    assert progress.infra == 1 and progress.success == len(TASKS) and not progress.gave_up
    trajs = _trajectories(store, coll)
    kept = [t for t in trajs if t.status is TrajectoryStatus.infra_error]
    assert len(trajs) == len(TASKS) + 1 and [t.item for t in kept] == [f"{first.id}#0"]
    assert kept[0].verdict.failure_kind == "infra"
    retried = next(t for t in trajs if t.item == kept[0].item and t.status is TrajectoryStatus.finished)
    assert retried.device.serial != kept[0].device.serial


def test_sensitive_actions_in_a_collection_follow_its_policy(pool, store, tmp_path):
    from planner_runtime.harness.safety import Policy, Sensitivity
    from planner_runtime.tasks.spec import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks:\n  - id: contacts.delete_ada\n    goal: Delete Ada Lovelace from my contacts\n    domain: contacts\n"
        "    setup:\n      - content_delete: {uri: 'content://com.android.contacts/raw_contacts'}\n"
        "      - content_insert: {uri: 'content://com.android.contacts/raw_contacts', values: {display_name: Ada Lovelace}}\n"
        "    checks:\n      - content: {uri: 'content://com.android.contacts/contacts', min: 0, max: 0}\n"
    )
    tasks = list(load_suite(suite).tasks)
    script = lambda task: ScriptedPlanner([{"name": "delete_contact", "arguments": {"name": "Ada Lovelace"}},  # noqa: E731
                                           {"name": "finish", "arguments": {"answer": "deleted"}}])
    _, denied = collect(tasks, pool=pool, store=store, planner_for=script, workers=1)
    assert (denied.success, denied.failed) == (0, 1)
    _, allowed = collect(tasks, pool=pool, store=store, planner_for=script, workers=1, policy=Policy(allow={Sensitivity.delete}))
    assert (allowed.success, allowed.failed) == (1, 0)


def test_an_episode_that_raises_stops_the_collection_instead_of_hanging(pool, store):
    from planner_runtime.runs.collect import CollectionStopped

    def buggy(task):
        if task.id == "contacts.add_contact":
            raise RuntimeError("a bug in the planner factory")
        return solver(task)

    with pytest.raises(CollectionStopped, match=r"contacts.add_contact#\d raised RuntimeError: a bug.*--resume coll_") as info:
        collect(TASKS, pool=pool, store=store, planner_for=buggy, workers=2, repeat=2)
    coll = re.search(r"--resume (coll_\S+)", str(info.value)).group(1)
    finished = {t.item for t in _trajectories(store, coll)}
    assert finished and not any(i.startswith("contacts.add_contact#") for i in finished)
    # the pool and the store are still usable, and resuming with the id the error names runs only the rest
    resumed, progress = collect(TASKS, pool=pool, store=store, planner_for=solver, workers=2, repeat=2, collection=coll)
    assert resumed == coll and (progress.skipped, progress.success) == (len(finished), 8 - len(finished))
    items = [t.item for t in _trajectories(store, coll)]
    assert sorted(items) == sorted(f"{t.id}#{r}" for t in TASKS for r in range(2))  # none ran twice
