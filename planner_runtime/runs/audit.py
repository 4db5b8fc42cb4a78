"""Audit a suite: flag the tasks a planner could pass without doing the work.

Two baselines run on every task, each on a phone seeded for it:

- **do nothing**: a planner that finishes at once with an empty answer. A task it passes
  measures nothing (its seed already satisfies it, or its checks are too weak);
- **name everything**: the same end state judged with an answer that lists every entity the
  setup seeded (names, titles, message and file texts, amounts, file names). A task it passes
  rewards listing every candidate over finding the right one: it needs ``answer_excludes`` with
  the wrong candidates, or a check on the end state. Seeded values are written as the tools and
  apps show them: a calendar time in milliseconds as ``2026-12-04 09:30`` and ``Fri, Dec 4
  9:30 AM`` in the phone's zone, an amount as ``1234.56`` and ``1,234.56``;
- **number spray**: the same, with an answer listing every whole number from 0 to
  :data:`SPRAY_UP_TO` and every number the setup seeded. A task it passes takes any number the
  answer happens to hold (a count or an amount check without a rule against guessing).

The second and third baselines acts on nothing, so it is judged on the phone the first one left, against
the same trajectory with that answer. A task that cannot be seeded (an app it needs is missing, a
setup command fails) is reported as such and the audit goes on; a device fault ends it.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Callable, ContextManager, Iterable, Iterator
from zoneinfo import ZoneInfo

from device_farm import Device
from device_farm.adb.device import AdbDevice
from device_farm.adb.server import AdbServer
from device_farm.errors import DeviceError
from planner_runtime.contract import DeviceRef, FailureKind, Source, ToolCall, Verdict
from planner_runtime.harness.identity import EpisodeIdentity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.tasks.verifiers import numbers_in, verify
from planner_runtime.tasks.world import task_world
from planner_runtime.trajectories.store import TrajectoryStore

if TYPE_CHECKING:
    from planner_runtime.harness.tools.simulated.world import World

UTC = ZoneInfo("UTC")
SPRAY_UP_TO = 20  # counts a task asks for stay well below this
_MS_EPOCH = (10**12, 10**13)  # a value in this range is a time in milliseconds (2001..2286)
TOOL_TIME = "%Y-%m-%d %H:%M"  # as the calendar tools print a time
APP_TIME = "%a, %b %-d %-I:%M %p"  # as the calendar app shows it

DeviceFactory = Callable[[], ContextManager[tuple[Device, EpisodeIdentity]]]


@dataclass(frozen=True)
class AuditResult:
    task_id: str
    verdict: Verdict | None  # the do-nothing episode's; None when the task could not be run (see ``error``)
    error: str | None = None
    device_fault: bool = False  # the task could not be run because the device failed
    listing: Verdict | None = None  # the same end state judged with an answer naming every seeded entity
    spraying: Verdict | None = None  # and with an answer listing 0..SPRAY_UP_TO and every seeded number

    @property
    def passes_without_acting(self) -> bool:
        return self.verdict is not None and self.verdict.success

    @property
    def passes_by_naming_everything(self) -> bool:
        return self.listing is not None and self.listing.success

    @property
    def passes_by_number_spray(self) -> bool:
        return self.spraying is not None and self.spraying.success

    @property
    def flagged(self) -> bool:
        return self.passes_without_acting or self.passes_by_naming_everything or self.passes_by_number_spray

    @property
    def ran(self) -> bool:
        """The do-nothing episode ran and its checks were read (not cut short by a fault)."""
        return self.verdict is not None and self.verdict.failure_kind not in (FailureKind.infra, FailureKind.spec)

    @property
    def infra(self) -> bool:
        """The device, not the task, was at fault (while seeding, acting or checking)."""
        faulted = (self.verdict, self.listing, self.spraying)
        return self.device_fault or any(v is not None and v.failure_kind is FailureKind.infra for v in faulted)

    def to_json(self) -> dict:
        v = self.verdict
        return {"task": self.task_id, "passes_without_acting": self.passes_without_acting,
                "passes_by_naming_everything": self.passes_by_naming_everything,
                "passes_by_number_spray": self.passes_by_number_spray, "ran": self.ran,
                "score": v.score if v else None, "failure_kind": v.failure_kind.value if v and v.failure_kind else None,
                "error": self.error, "infra": self.infra}


def shown(value: object, zone: ZoneInfo = UTC) -> list[str]:
    """``value`` as the tools and apps show it: a time in milliseconds as the calendar tool and
    app print it in ``zone``; a number also with two decimals and thousands separators."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return [text]
    if number.is_integer() and _MS_EPOCH[0] <= number < _MS_EPOCH[1]:
        when = datetime.fromtimestamp(number / 1000, zone)
        return [when.strftime(TOOL_TIME), when.strftime(APP_TIME)]
    forms = [text, f"{number:,.2f}", f"{number:.2f}"]
    if number.is_integer():
        forms.append(f"{int(number):,}")
    return list(dict.fromkeys(forms))


def _touched_families(task: TaskSpec) -> set[str]:
    """The simulated families ``task`` works with: those its demo calls and its setup or checks name."""
    from planner_runtime.harness.tools.simulated.tool import families

    family_of = {tool.name: name for name, family in families().items() for tool in family.tools}
    named = {family_of[c.name] for c in task.demo if c.name in family_of}
    named |= {a.world.collection.split(".", 1)[0] for a in task.setup if a.world is not None}
    return named | {c.world.collection.split(".", 1)[0] for c in task.checks if c.world is not None}


def world_values(task: TaskSpec, world: World | None) -> list[object]:
    """Every value in the rows of the simulated services ``task`` works with, as its episode
    starts: what the planner could read there (and so list)."""
    if world is None:
        return []
    families = _touched_families(task)
    return [v for name in sorted(world.state) if name.split(".", 1)[0] in families
            for row in world.state[name] for v in row.values() if v is not None and not isinstance(v, bool)]


def seeded_entities(task: TaskSpec, zone: ZoneInfo = UTC, world: World | None = None) -> list[str]:
    """Every value the task's setup puts on the phone or in the user's memory, and every value of
    the simulated services it works with (``world``), rendered as the tools show it (see
    :func:`shown`), in order and without repeats: what an answer that "names everything" the
    planner could see lists."""
    found: list[str] = []
    for action in [*task.setup, None]:
        if action is None:
            values = world_values(task, world)
        elif action.content_insert is not None:
            values = [v for v in action.content_insert.values.values() if v is not None and not isinstance(v, bool)]
        elif action.file_push is not None:
            values = [PurePosixPath(action.file_push.path).name, action.file_push.content]
        elif action.memory is not None:
            values = [action.memory.text]
        elif action.settings_put is not None:
            values = [action.settings_put.value]
        else:
            values = []
        for value in values:
            for text in shown(task.render(value) if isinstance(value, str) else value, zone):
                if text.strip() and text not in found:
                    found.append(text)
    return found


def naming_everything(task: TaskSpec, zone: ZoneInfo = UTC, world: World | None = None) -> str:
    return "; ".join(seeded_entities(task, zone, world))


def number_spray(task: TaskSpec, zone: ZoneInfo = UTC, world: World | None = None) -> str:
    """Every whole number up to :data:`SPRAY_UP_TO`, then every number the seeded values hold."""
    seeded = [f"{v:g}" for text in seeded_entities(task, zone, world) for x in numbers_in(text) for v in (x, abs(x))]
    return "It is one of " + " ".join(dict.fromkeys([str(i) for i in range(SPRAY_UP_TO + 1)] + seeded))


def phone_zone(device: Device) -> ZoneInfo:
    """The zone the phone's apps show times in (``persist.sys.timezone``), UTC when unset or unknown."""
    name = device.shell(["getprop", "persist.sys.timezone"]).output.strip()
    try:
        return ZoneInfo(name) if name else UTC
    except (ValueError, KeyError):
        return UTC


def audit(tasks: Iterable[TaskSpec], open_device: DeviceFactory, store: TrajectoryStore) -> list[AuditResult]:
    """One do-nothing episode per task, its end state judged a second time with the answer that
    names everything; the do-nothing trajectories go to ``store`` like any other."""
    results = []
    for task in tasks:
        planner = ScriptedPlanner([ToolCall(name="finish", arguments={"answer": ""})], release="audit-noop")
        try:
            with open_device() as (device, identity):
                world = task_world(task)  # the baselines below judge the world this episode left
                traj = run_goal(task.rendered_goal(), device=device, identity=identity,
                                planner=planner, store=store, task=task, max_steps=1, world=world)
                assert traj.verdict is not None  # run_goal verifies every task
                listing = spraying = None
                if traj.verdict.failure_kind not in (FailureKind.infra, FailureKind.spec):
                    zone = phone_zone(device)
                    start = task_world(task)  # what the services held before the episode: what could be listed
                    listing = verify(task, device, traj.model_copy(update={"answer": naming_everything(task, zone, start)}), world)
                    spraying = verify(task, device, traj.model_copy(update={"answer": number_spray(task, zone, start)}), world)
        except DeviceError as exc:
            results.append(AuditResult(task.id, None, error=str(exc), device_fault=exc.infra))
            if exc.infra:  # the phone is gone: the tasks after this one would only repeat it
                break
            continue
        results.append(AuditResult(task.id, traj.verdict, listing=listing, spraying=spraying))
    return results


@contextmanager
def builtin_phones() -> Iterator[DeviceFactory]:
    """A factory of fresh built-in virtual phones, one per task, behind one private adb server:
    an audit seeds every task's setup, which wipes what the phone held, so it runs here unless
    told to use an attached phone."""
    from device_farm.virtual import VirtualPhone  # only when the audit runs on it

    with AdbServer() as server:
        @contextmanager
        def fresh() -> Iterator[tuple[Device, EpisodeIdentity]]:
            with VirtualPhone() as phone:
                serial = server.connect_device(phone.address)
                device = AdbDevice(serial, adb_host=server.host, adb_port=server.port)
                device.connect()
                try:
                    yield device, EpisodeIdentity(device=DeviceRef(serial=serial, model=device.info().model, kind="adb"), source=Source.sandbox)
                finally:
                    device.close()

        yield fresh


def what_setup_resets(tasks: Iterable[TaskSpec]) -> str:
    """The data the tasks' setups delete or overwrite on a phone, in a few words per kind."""
    deleted: list[str] = []
    added: list[str] = []
    changed: list[str] = []
    written: list[str] = []
    emptied: list[str] = []
    for task in tasks:
        for action in task.setup:
            if action.content_delete is not None:
                item, into = task.render(action.content_delete.uri), deleted
            elif action.content_insert is not None:
                item, into = task.render(action.content_insert.uri), added
            elif action.settings_put is not None:
                item, into = f"{action.settings_put.namespace}/{action.settings_put.key}", changed
            elif action.file_push is not None:
                item, into = task.render(action.file_push.path), written
            elif action.folder_empty is not None:
                item, into = task.render(action.folder_empty.path), emptied
            else:
                continue  # memories go to a scratch profile, never the phone
            if item not in into:
                into.append(item)
    parts = [f"{label} {', '.join(items)}" for label, items in
             (("deletes rows of", deleted), ("adds rows to", added), ("overwrites settings", changed),
              ("overwrites files", written), ("empties folders", emptied)) if items]
    return "; ".join(parts) or "nothing"
