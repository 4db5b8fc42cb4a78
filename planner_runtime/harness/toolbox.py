"""The tools of an episode: the default list, plus the composites of the skills chosen for it."""

from __future__ import annotations

from typing import Sequence

from device_farm import Device
from planner_runtime.harness.apps import APPS
from planner_runtime.harness.safety import SafetyGate
from planner_runtime.harness.skills import Skill, load_skills, select, skills_prompt
from planner_runtime.harness.tools import Tool, ToolContext, ToolSet
from planner_runtime.harness.tools.apps import AddContact, DeleteContact, Finish, SetAlarm
from planner_runtime.harness.tools.composite import CompositeTool
from planner_runtime.harness.tools.gui import Back, Home, LongPress, OpenApp, ReadScreen, Scroll, Swipe, Tap, TypeText, Wait
from planner_runtime.harness.tools.calendar import CreateEvent, ListEvents
from planner_runtime.harness.tools.email import SendEmail
from planner_runtime.harness.tools.phone import Call, RecentCalls
from planner_runtime.harness.tools.files import DeleteFile, ListFiles, ReadTextFile
from planner_runtime.harness.tools.maps import NavigateTo, SavedPlaces, SavePlace, SearchPlace
from planner_runtime.harness.tools.music import NowPlaying, PauseMusic, PlayMusic
from planner_runtime.harness.tools.notes import CreateNote, DeleteNote, SearchNotes
from planner_runtime.harness.tools.settings import SetAppPermission, SetBrightness, SetLocation, SetScreenLock, ToggleSetting
from planner_runtime.harness.tools.messaging import ReadMessages, SendMessage
from planner_runtime.harness.tools.shopping import BuyProduct, SearchProducts
from planner_runtime.harness.tools.food import FindRestaurants, OrderFood
from planner_runtime.harness.tools.travel import BookHotel, SearchHotels
from planner_runtime.harness.tools.payments import PaymentActivity, SendMoney


def default_toolset() -> ToolSet:
    return ToolSet([OpenApp(), ReadScreen(), Tap(), LongPress(), TypeText(), Scroll(), Swipe(), Back(), Home(), Wait(), SetAlarm(), AddContact(), DeleteContact(), ToggleSetting(), SetLocation(), SetScreenLock(), SetBrightness(), SetAppPermission(), CreateNote(), SearchNotes(), DeleteNote(), ListFiles(), ReadTextFile(), DeleteFile(), SearchPlace(), NavigateTo(), SavePlace(), SavedPlaces(), PlayMusic(), PauseMusic(), NowPlaying(), SendMessage(), ReadMessages(), SearchProducts(), BuyProduct(), FindRestaurants(), OrderFood(), SearchHotels(), BookHotel(), PaymentActivity(), SendMoney(), Call(), RecentCalls(), SendEmail(), CreateEvent(), ListEvents(), Finish()])


def episode_tool_names() -> set[str]:
    """Every tool an episode can offer: the default list plus the per-episode ones (user,
    screenshot, memory, sub-agents), which need a user, a profile or a planner to exist."""
    from planner_runtime.harness.subagents import Delegate
    from planner_runtime.harness.tools.memory import Recall, Remember
    from planner_runtime.harness.tools.screenshot import Screenshot
    from planner_runtime.harness.tools.user import AskUser

    return set(default_toolset().names()) | {t.name for t in (AskUser, Screenshot, Remember, Recall, Delegate)}


def with_skills(base: ToolSet, chosen: list[Skill], extra: Sequence[Tool] = ()) -> ToolSet:
    """``base`` with the composites of ``chosen`` and the ``extra`` tools added before ``finish``."""
    tools = [base[name] for name in base.names() if name != "finish"]
    tools += [CompositeTool(skill, base) for skill in chosen if skill.composite] + list(extra)
    return ToolSet(tools + ([base["finish"]] if "finish" in base else []))


def toolset_for(
    goal: str, device: Device, skills: list[Skill] | None = None, gate: SafetyGate | None = None, extra: Sequence[Tool] = ()
) -> tuple[ToolSet, ToolContext, str]:
    """Tools, a tool context and the skills prompt for ``goal`` on ``device``: skills are chosen
    by relevance among those whose tools are offered and whose apps are installed. Without a
    ``gate``, sensitive actions are denied."""
    base, ctx = default_toolset(), ToolContext(device=device, gate=gate or SafetyGate())
    installed = ctx.installed()
    apps = [a.name for a in APPS if any(p in installed for p in a.packages)]
    chosen = select(load_skills() if skills is None else skills, goal, tools=base.names(), apps=apps)
    return with_skills(base, chosen, extra), ctx, skills_prompt(chosen)
