"""Collections past one host: the same work queue and store, device hosts on a Ray cluster.

``collect --ray ADDRESS`` and ``bench --ray ADDRESS`` run their items on the device hosts of a
Ray cluster: one actor per host owns that host's pool and planner (:mod:`.host`), the process
that started the run owns the queue and the one store (:mod:`.driver`), and :mod:`.cluster`
joins the cluster (Ray is an optional extra, imported only here). Ray does the scheduling, the
transport and the failure detection; nothing here manages machines.
"""

from planner_runtime.runs.distributed.cluster import INSTALL, RayMissing, RayUnreachable, ray_session
from planner_runtime.runs.distributed.driver import Farm, HostsLost, collect_on_ray
from planner_runtime.runs.distributed.host import PlannersOnHost, SamePlanners

__all__ = ["INSTALL", "Farm", "HostsLost", "PlannersOnHost", "RayMissing", "RayUnreachable", "SamePlanners", "collect_on_ray", "ray_session"]
