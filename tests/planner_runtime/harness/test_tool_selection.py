"""The tool list is chosen per device (app tools only for installed apps) and per goal (the app
tools of the apps the goal bears on), so a prompt carries a fraction of the ~45 tools."""

from __future__ import annotations

import pytest

from device_farm.adb.device import AdbDevice
from device_farm.virtual.apps import default_apps
from planner_runtime.contract import ErrorCode, FeedbackStatus, ToolCall
from planner_runtime.harness.apps import APPS, find_app
from planner_runtime.harness.relevance import names_any, scores, terms, words
from planner_runtime.harness.subagents import Delegate
from planner_runtime.harness.toolbox import default_toolset, for_goal, relevant_apps, tool_fit, toolset_for, usable, with_skills
from planner_runtime.harness.tools import ToolSet
from planner_runtime.harness.tools.clock import SetAlarm
from planner_runtime.harness.tools.memory import Recall, Remember
from planner_runtime.harness.tools.screenshot import Screenshot
from planner_runtime.harness.tools.simulated.tool import simulated_tools
from planner_runtime.harness.tools.core import AskUser
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.planners.toolcalls import render_tools
from planner_runtime.runs.run import run_goal
from planner_runtime.harness.identity import EpisodeIdentity

GUI = {"open_app", "read_screen", "tap", "long_press", "type_text", "scroll", "swipe", "back", "home", "wait", "finish"}
ALL_APPS = [a.name for a in APPS]


def test_stemming_lets_word_forms_meet_and_rare_words_weigh_more():
    assert terms("Texting my booked hotels") == terms("text book hotel")
    alarm, rare = scores(["set an alarm", "alarm clock timer"], "alarm timer")
    assert rare > alarm > 0
    assert scores(["send email"], "play a song") == [0.0]
    # a word in a heavier field counts more
    named, described = scores([[("music", 3.0)], [("music", 1.0)]], "music")
    assert named == 3 * described


def test_goal_gets_its_apps_tools_and_every_general_tool():
    tools = for_goal(default_toolset(), "Set an alarm for 7:30")
    names = set(tools.names())
    assert GUI <= names and "set_alarm" in names
    assert not names & {"buy_product", "send_money", "book_hotel", "play_music", "send_email"}
    assert relevant_apps(default_toolset(), "Order a Pad Thai from Thai Basil on DoorDash")[0] == "Food delivery"
    assert "Messages" in relevant_apps(default_toolset(), "Text my partner that I'm running late")
    assert relevant_apps(default_toolset(), "Get two pizzas delivered from Luigi's")[0] == "Food delivery"


def test_the_prompt_shrinks_to_a_fraction():
    every = len(render_tools(default_toolset().specs()))
    for goal in ("Set an alarm for 7:30", "Call Grace Hopper", "Book Hotel Britania in Lisbon on Booking.com"):
        assert len(render_tools(for_goal(default_toolset(), goal).specs())) < every / 2, goal


def test_a_goal_that_names_no_app_keeps_every_app_tool():
    assert for_goal(default_toolset(), "Hmm, do the thing").names() == default_toolset().names()


def test_selection_is_stable_and_keeps_the_default_order_but_each_apps_best_tool_first():
    goal = "Send Maria Garcia $20 on PayPal"
    a = for_goal(default_toolset(), goal).names()
    assert a == for_goal(default_toolset(), goal).names()
    order = default_toolset().names()
    general = [n for n in a if default_toolset()[n].app is None]
    assert general == sorted(general, key=order.index)
    payments = [t.name for t in default_toolset() if t.app == "Payments"]
    assert payments == ["payment_activity", "send_money"]  # the catalogue's order...
    assert [n for n in a if n in payments] == ["send_money", "payment_activity"]  # ...the goal's


def test_each_apps_tools_are_ordered_by_how_well_they_fit_the_goal():
    def app_tools(goal: str, app: str) -> list[str]:
        return [t.name for t in for_goal(default_toolset(), goal) if t.app == app]

    assert app_tools("Call back the number I just missed a call from", "Phone") == ["recent_calls", "call"]
    assert app_tools("Call +15550100", "Phone") == ["call", "recent_calls"]
    assert app_tools("Start walking directions to Tartine Bakery", "Maps")[0] == "navigate_to"
    # tools the goal does not bear on keep the catalogue's order; quoted text is not a wish
    assert app_tools("Start walking directions to Tartine Bakery", "Maps")[1:] == ["search_place", "save_place", "saved_places"]
    assert app_tools("Text Bo saying 'read my messages'", "Messages") == ["send_message", "read_messages"]
    fit = tool_fit([t for t in default_toolset() if t.app == "Phone"], "Call back the number I just missed a call from")
    assert fit["recent_calls"] > fit["call"] > 0


def with_services() -> ToolSet:
    return with_skills(default_toolset(), [], simulated_tools())  # as an episode with a world gets them


def test_the_best_matching_apps_tools_come_first_and_general_tools_keep_their_places():
    goal = "Find out when The Last Orbit is showing at Zoo Palast on December 4 and add it to my calendar"
    tools = for_goal(with_services(), goal)
    apps = [t.app for t in tools if t.app is not None]
    assert apps == sorted(apps, key=["cinema", "Calendar"].index)  # cinema's tools, then Calendar's
    in_catalogue_order = [t for t in with_services() if t.name in tools]
    assert [(i, t.name) for i, t in enumerate(tools) if t.app is None] == [
        (i, t.name) for i, t in enumerate(in_catalogue_order) if t.app is None
    ]
    assert tools.names()[-1] == "finish"


def test_an_app_the_goal_names_is_offered_even_when_another_matches_far_better():
    # the concert's service matches four rare words; "calendar" alone names the second app
    assert relevant_apps(with_services(), "Find out when Lina Moss plays in Berlin and put the concert in my calendar") == ["tickets", "Calendar"]
    sleep_note = relevant_apps(with_services(), "Get my sleep summary for last night and save it in a note titled 'Sleep'")
    assert sleep_note[0] == "fitness" and "Keep Notes" in sleep_note
    # "Text" names Messages; "running", "late" and "minutes" are only topics of the fitness, train and transit apps
    late = relevant_apps(with_services(), "Text my partner that I'm running late")
    assert "Messages" in late and not {"fitness", "transit"} & set(late)


def test_quoted_text_is_what_to_write_not_what_to_use():
    assert "grocery" in relevant_apps(with_services(), "Make a note titled Groceries")
    assert "grocery" not in relevant_apps(with_services(), "Make a note titled 'Groceries'")
    assert "trains" in relevant_apps(with_services(), "Text +15550123 saying Running 10 minutes late")
    assert "trains" not in relevant_apps(with_services(), "Text +15550123 saying 'Running 10 minutes late'")
    # a goal whose only app words are quoted still gets them
    assert relevant_apps(with_services(), "'Weather'") == relevant_apps(with_services(), "Weather")


def test_a_name_counts_only_as_the_whole_phrase():
    assert names_any(words("send it as a text message"), ["text messages"])
    assert not names_any(words("book a table at the address"), ["address book"])
    assert not names_any(words("anything"), ["", "the"])  # nothing left to match after stop words


def test_keep_brings_tools_the_chosen_skills_use():
    tools = for_goal(default_toolset(), "Set an alarm for 7:30", keep={"read_messages"})
    assert "read_messages" in tools and "send_message" not in tools


def test_every_tool_names_its_app_as_the_catalogue_does():
    """An app the catalogue lacks would never count as installed, and its tools would be ranked
    without the app's aliases and topics; so tool selection refuses one."""
    for tool in [*default_toolset(), AskUser, Screenshot, Remember, Recall, Delegate]:
        assert tool.app is None or (find_app(tool.app) is not None and find_app(tool.app).name == tool.app), tool.name
    misspelt = type("MisspeltAlarm", (SetAlarm,), {"app": "Clcok"})()
    with pytest.raises(ValueError, match="Clcok"):
        relevant_apps(ToolSet([misspelt]), "Set an alarm for 7:30")


def test_app_tools_of_missing_apps_are_not_offered():
    apps = [a for a in ALL_APPS if a not in ("YouTube Music", "Files")]
    names = set(usable(default_toolset(), apps).names())
    assert "play_music" not in names and "now_playing" not in names
    assert "list_files" in names  # file tools work over the shell without a file manager
    assert "set_alarm" in names and GUI <= names


def test_a_phone_without_the_music_app_gets_no_music_tools(phone_factory):
    handle = phone_factory(apps=[f for f in default_apps() if f.__name__ not in ("Music", "PayPal")])
    device = AdbDevice(handle.serial, adb_host=handle.adb.host, adb_port=handle.adb.port)
    device.connect()
    try:
        tools, ctx, _ = toolset_for("Play Blinding Lights, then pay Sam on PayPal", device)
        names = set(tools.names())
        assert not names & {"play_music", "pause_music", "now_playing", "send_money", "payment_activity"}
        assert GUI <= names
        fb = tools.execute(ToolCall(name="play_music", arguments={"query": "Blinding Lights"}), ctx)
        assert fb.status is FeedbackStatus.error and fb.error.code is ErrorCode.unknown_tool
    finally:
        device.close()


def test_episode_records_the_narrowed_tools(device, device_ref, store):
    script = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "set"}}]
    traj = run_goal("Set an alarm for 7:30", device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store)
    offered = {t.name for t in traj.tools}
    assert "set_alarm" in offered and "buy_product" not in offered
    assert {"ask_user", "screenshot", "delegate"} <= offered
    assert traj.steps[0].feedback.status is FeedbackStatus.ok


def test_delegate_without_tool_names_gets_the_tools_of_its_own_goal(device, device_ref, store):
    script = [
        {"name": "delegate", "arguments": {"goal": "Set an alarm for 6:00", "tools": [], "budget": 2}},
        {"name": "set_alarm", "arguments": {"hour": 6, "minutes": 0}},  # the child's turn
        {"name": "finish", "arguments": {"answer": "alarm set"}},
        {"name": "finish", "arguments": {"answer": "done"}},  # the parent's
    ]
    # the parent's goal bears on Maps only, so it was not offered set_alarm itself
    traj = run_goal("Take me home in Maps, but first let a helper do the rest", device=device, identity=EpisodeIdentity(device=device_ref), planner=ScriptedPlanner(script), store=store)
    assert "set_alarm" not in {t.name for t in traj.tools}
    fb = traj.steps[0].feedback
    assert fb.status is FeedbackStatus.ok and fb.result["status"] == "finished", fb
    child = store.get(fb.result["trajectory"])
    assert "set_alarm" in {t.name for t in child.tools} and child.steps[0].feedback.status is FeedbackStatus.ok


def test_stemming_is_safe_from_many_threads():
    """Collection workers choose tools at the same time; a shared stemmer mangled words."""
    import random
    import string
    import threading

    from planner_runtime.harness import relevance

    rng = random.Random(7)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 12))) for _ in range(20000)]
    relevance._stem.cache_clear()
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def stem_all(part):
        try:
            results.update({w: relevance._stem(w) for w in part})
        except BaseException as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=stem_all, args=(words[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    relevance._stem.cache_clear()
    assert all(relevance._stem(w) == s for w, s in list(results.items())[:2000])
