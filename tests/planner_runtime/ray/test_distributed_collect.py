"""A collection on two device hosts of a local Ray: every item once in the one store, the verdicts a
local collection gives, a host killed mid-collection whose running items run again on the other,
and a collection whose every host died resumed without counting anything twice."""

from __future__ import annotations

import functools

import pytest

from planner_runtime.cli.devices import pool_from_options
from planner_runtime.runs.collect import collect
from planner_runtime.runs.demos import demo_planner
from planner_runtime.runs.distributed import Farm, HostsLost, SamePlanners, collect_on_ray
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.trajectories.store import TrajectoryStore

# A tool task, a sub-agent task (its child episode must travel with it), a simulated-world task and
# one whose demo sends money, which the default policy blocks: a failed verdict among the passes.
IDS = ("clock.set_alarm", "contacts.add_contact", "subagent.banking_balance_text", "shopping.buy_product",
       "payments.send_money", "phone.call_number")
TASKS = [t for t in builtin_suite().tasks if t.id in IDS]


def _farm(tmp_path, hosts: int = 2) -> Farm:
    return Farm(pool=functools.partial(pool_from_options, [], 2, tmp_path / "pool"), workers=2, hosts=hosts)


def _episodes(store: TrajectoryStore, collection: str) -> dict[str, list]:
    """Each item's top-level episodes."""
    found: dict[str, list] = {}
    for trajectory_id in store.ids(collection=collection):
        traj = store.get(trajectory_id)
        if traj.parent is None:
            found.setdefault(traj.item, []).append(traj)
    return found


def test_two_hosts_store_every_item_once_with_the_verdicts_a_local_collection_gives(ray_cluster, tmp_path):
    with pool_from_options([], 2, tmp_path / "pool") as pool, TrajectoryStore(tmp_path / "local.sqlite") as store:
        local_id, local = collect(TASKS, pool=pool, store=store, planner_for=demo_planner, workers=2, repeat=2)
        expected = {item: [t.verdict.success for t in trajs] for item, trajs in _episodes(store, local_id).items()}
    assert len(expected) == 12 and not all(v == [True] for v in expected.values())  # passes and failures both

    with TrajectoryStore(tmp_path / "one.sqlite") as store:
        coll, progress = collect_on_ray(TASKS, farm=_farm(tmp_path), store=store, planners=SamePlanners(demo_planner), repeat=2)
        episodes = _episodes(store, coll)
        assert {item: [t.verdict.success for t in trajs] for item, trajs in episodes.items()} == expected
        assert (progress.total, progress.success, progress.failed, progress.infra, progress.gave_up) == (
            local.total, local.success, local.failed, 0, [])
        assert len(progress.hosts) == 2 and sum(progress.hosts.values()) == 12  # both hosts worked
        delegated = episodes["subagent.banking_balance_text#0"][0]
        child = store.get(store.children(delegated.id)[0])  # the sub-agent's episode came with its parent, steps and all
        assert child.steps and child.status.value == "finished"
        assert store.usage(delegated.id).subagent_episodes == 1

        again, more = collect_on_ray(TASKS, farm=_farm(tmp_path), store=store, planners=SamePlanners(demo_planner),
                                     repeat=2, collection=coll)
        assert again == coll and (more.skipped, more.done) == (12, 0)  # resumed: nothing left to run


def test_a_host_killed_mid_collection_has_its_running_items_run_on_the_other_and_none_counts_twice(ray_cluster, tmp_path):
    ray, warnings, killed = ray_cluster, [], []
    coll = "coll_killed_host"

    def kill_host_1(progress) -> None:  # once host 1 has settled an item and is running more
        if not killed and any(label.startswith("host 1 ") for label in progress.hosts):
            killed.append(True)
            ray.kill(ray.get_actor(f"{coll}/host-1"))

    with TrajectoryStore(tmp_path / "one.sqlite") as store:
        _, progress = collect_on_ray(TASKS, farm=_farm(tmp_path), store=store, planners=SamePlanners(demo_planner),
                                     repeat=4, collection=coll, on_change=kill_host_1, on_warning=warnings.append)
        episodes = _episodes(store, coll)

    assert killed and len(warnings) == 1, warnings
    lost = warnings[0]
    assert lost.startswith("host 1 on ") and "was lost (ActorDiedError)" in lost and "back on the queue" in lost
    rerun = lost.split("(")[-1].rstrip(")").split(", ")  # the items it was running, named
    assert rerun and all(item in episodes for item in rerun)
    assert sorted(episodes) == sorted(f"{t.id}#{r}" for t in TASKS for r in range(4))
    assert all(len(trajs) == 1 for trajs in episodes.values())  # one stored episode per item: the lost ones never were
    assert progress.success + progress.failed == progress.total == 24 and progress.gave_up == []
    host_1 = next(n for label, n in progress.hosts.items() if label.startswith("host 1 "))
    host_2 = next(n for label, n in progress.hosts.items() if label.startswith("host 2 "))
    assert host_1 >= 1 and host_1 + host_2 == 24


def test_with_every_host_lost_the_collection_stops_keeping_what_finished_and_resumes(ray_cluster, tmp_path):
    ray, killed = ray_cluster, []
    coll = "coll_every_host_lost"

    def kill_both(progress) -> None:
        if progress.done >= 2 and not killed:
            killed.append(True)
            for index in (1, 2):
                ray.kill(ray.get_actor(f"{coll}/host-{index}"))

    with TrajectoryStore(tmp_path / "one.sqlite") as store:
        with pytest.raises(HostsLost, match=rf"every device host was lost .*continue with --resume {coll}"):
            collect_on_ray(TASKS, farm=_farm(tmp_path), store=store, planners=SamePlanners(demo_planner), repeat=2,
                           collection=coll, on_change=kill_both, on_warning=lambda line: None)
        kept = _episodes(store, coll)
        assert len(kept) >= 2  # what finished before the hosts died is kept

        _, progress = collect_on_ray(TASKS, farm=_farm(tmp_path, hosts=1), store=store, planners=SamePlanners(demo_planner),
                                     repeat=2, collection=coll)
        episodes = _episodes(store, coll)
    assert progress.skipped == len(kept) and progress.skipped + progress.done == 12
    assert len(episodes) == 12 and all(len(trajs) == 1 for trajs in episodes.values())
