"""Simulated tools: family files are refused with file, line and field; the world runs a tool's
steps all or nothing; world checks judge the end state; an LLM simulator that is down falls back
and one that contradicts the world makes the episode unscored."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from planner_runtime.contract import DeviceRef, FailureKind, Source, Trajectory, TrajectoryStatus
from planner_runtime.errors import TaskSpecError
from planner_runtime.harness.tools import ToolFailure
from planner_runtime.harness.tools.simulated.family import family_problems
from planner_runtime.harness.tools.simulated.llm import LlmSimulator
from planner_runtime.harness.tools.simulated.tool import families, fresh_world, simulated_tools
from planner_runtime.harness.tools.simulated.world import World
from planner_runtime.tasks.spec import find_task, load_suite
from planner_runtime.tasks.verifiers import verify
from planner_runtime.tasks.world import world_for

FAMILY = """\
family: toybank
title: Toy Bank
domain: finance
collections:
  accounts:
    key: name
    fields:
      name: {type: string}
      balance: {type: number}
    rows:
      - {name: checking, balance: 100}
tools:
  - name: toy_balance
    description: Read an account's balance.
    params:
      account: {type: string, description: "Account name"}
    steps:
      - {verb: get, collection: accounts, match: {name: "{account}"}}
    returns: {balance: "{item.balance}"}
"""


def _problems(tmp_path, text):
    path = tmp_path / "fam.yaml"
    path.write_text(text)
    return family_problems(path)


def test_a_family_file_loads_and_its_broken_variants_name_line_and_field(tmp_path):
    family, problems = _problems(tmp_path, FAMILY)
    assert problems == [] and family is not None and family.tools[0].name == "toy_balance"
    _, problems = _problems(tmp_path, FAMILY.replace('"{item.balance}"', '"{item.overdraft}"'))
    assert problems and problems[0].line == 19 and problems[0].field.startswith("tools.0.returns")
    assert "no field 'overdraft'" in problems[0].message
    _, problems = _problems(tmp_path, FAMILY.replace("balance: 100}", "balance: lots}"))
    assert problems and problems[0].line == 11 and "rows.0.balance" in problems[0].field and "must be number" in problems[0].message
    _, problems = _problems(tmp_path, FAMILY.replace('{name: "{account}"}', '{name: "{acount}"}'))
    assert problems and "names no parameter" in problems[0].message


def test_the_shipped_families_load_and_their_tool_names_are_unique():
    from planner_runtime.harness.toolbox import default_toolset

    names = [t.name for t in simulated_tools()]
    assert len(names) == len(set(names)) and families()
    assert not set(names) & set(default_toolset().names())


def test_a_tool_that_fails_midway_leaves_the_world_as_it_was():
    world = fresh_world()
    weather = families()["weather"]
    subscribe = next(t for t in weather.tools if t.name == "subscribe_weather")
    before = world.dump()
    with pytest.raises(ToolFailure, match="no cities with city='Atlantis'"):
        world.run(weather, subscribe, {"city": "Atlantis", "kind": "rain", "time": None})
    assert world.dump() == before
    done = world.run(weather, subscribe, {"city": "paris", "kind": "rain", "time": None})
    assert done["city"] == "Paris" and len(world.rows("weather.subscriptions")) == 1


def family_world(family) -> World:  # noqa: ANN001
    return World.fresh({family.family: family})


def test_a_get_goes_on_only_when_its_require_holds_and_find_or_add_refuse_one(tmp_path):
    guarded = FAMILY.replace('match: {name: "{account}"}}', 'match: {name: "{account}"}, require: {balance: 0}, refuse: "{item.name} is not empty"}')
    family, problems = _problems(tmp_path, guarded)
    assert problems == [] and family is not None
    world = family_world(family)
    with pytest.raises(ToolFailure, match="checking is not empty"):
        world.run(family, family.tools[0], {"account": "checking"})
    _, problems = _problems(tmp_path, guarded.replace("verb: get", "verb: find"))
    assert problems and "find takes no require or refuse" in problems[0].message and problems[0].field.endswith("require")


LISTERS = """\
  - name: toy_overdrawn
    description: List the overdrawn accounts.
    steps:
      - {verb: find, collection: accounts, match: {"balance<=": -1}}
    returns: {accounts: "{items}"}
  - name: toy_accounts
    description: List every account.
    steps:
      - {verb: find, collection: accounts}
    returns: {accounts: "{items}"}
"""


def test_a_missing_row_is_answered_with_the_keys_there_are_and_the_tool_that_lists_them(tmp_path):
    family, problems = _problems(tmp_path, FAMILY + LISTERS)
    assert problems == [] and family is not None
    world = family_world(family)
    # the list of every account, not the one filtered to the overdrawn ones declared first
    with pytest.raises(ToolFailure, match=r"^no accounts with name='savings'; there are: checking; toy_accounts lists them$"):
        world.run(family, family.tools[0], {"account": "savings"})
    family, _ = _problems(tmp_path, FAMILY)  # no tool lists them: the keys alone
    with pytest.raises(ToolFailure, match=r"^no accounts with name='savings'; there are: checking$"):
        family_world(family).run(family, family.tools[0], {"account": "savings"})
    rides = families()["rides"]
    cancel = next(t for t in rides.tools if t.name == "ride_cancel")
    with pytest.raises(ToolFailure, match="; ride_history lists them with their details$"):
        fresh_world().run(rides, cancel, {name: "Airport" for name in cancel.params})


def test_a_refusal_never_points_at_the_row_a_task_seeded_first():
    # tasks seed the row they want first: a hint listing keys in seeded order would make "send
    # the first key listed" a right answer no planner earned
    home, cinema = families()["smart_home"], families()["cinema"]
    switch = next(t for t in home.tools if t.name == "home_light_switch")
    cancel = next(t for t in cinema.tools if t.name == "cinema_cancel")

    def hint(world: World, family, tool, args) -> str:  # noqa: ANN001
        with pytest.raises(ToolFailure) as refused:
            world.run(family, tool, args)
        return str(refused.value)

    seeded, turned = fresh_world(), fresh_world()
    turned.state["smart_home.devices"].reverse()
    args = {"light": "blue", "power_on": False}
    assert hint(seeded, home, switch, args) == hint(turned, home, switch, args)
    names = hint(seeded, home, switch, args).split("there are: ")[1].split(";")[0].split(", ")
    rows = [r["name"] for r in seeded.state["smart_home.devices"]]
    assert names[:8] != rows[:8] and set(names[:8]) < set(rows) and names[8] == f"{len(rows) - 8} more"
    assert hint(seeded, home, switch, args).endswith("; home_devices lists them")
    # codes tell nothing about which booking is which: the hint names the tool that says, not the codes
    assert hint(seeded, cinema, cancel, {"booking_id": "Paper Lanterns"}) == (
        "no bookings with id='Paper Lanterns'; cinema_bookings lists them with their details")


def _trajectory(answer: str) -> Trajectory:
    return Trajectory(goal="g", source=Source.simulated, device=DeviceRef(serial="x"), planner="scripted",
                      status=TrajectoryStatus.finished, answer=answer)


def test_world_checks_judge_the_end_state():
    task = find_task("weather.cancel_subscription")
    world = world_for(task)
    assert not verify(task, None, _trajectory("done"), world).success  # nothing cancelled yet
    world.seed("weather.subscriptions", [r for r in world.rows("weather.subscriptions") if r["city"] != "Paris"], replace=True)
    assert verify(task, None, _trajectory("done"), world).success


def test_a_task_seeding_a_row_that_does_not_fit_is_refused_with_its_field(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("""\
tasks:
  - id: w.bad
    goal: "x"
    domain: weather
    setup:
      - world: {collection: weather.cities, rows: [{city: Oslo, temp_c: cold}]}
    checks:
      - world: {collection: weather.cities, match: {city: Oslo}}
""")
    with pytest.raises(TaskSpecError) as err:
        load_suite(path)
    assert err.value.line == 6 and "setup.0.world" in err.value.field


class _Llm(BaseHTTPRequestHandler):
    reply = "It is 14 degrees in Paris."

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"choices": [{"message": {"content": type(self).reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def llm():
    server = HTTPServer(("127.0.0.1", 0), _Llm)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_an_llm_simulator_writes_text_and_a_contradiction_makes_the_episode_unscored(llm):
    task = find_task("weather.now")
    weather = families()["weather"]
    now = next(t for t in weather.tools if t.name == "weather_now")
    world = world_for(task, LlmSimulator(llm))
    _Llm.reply = "It is 14 degrees and cloudy in Paris."
    assert world.simulator.respond(world, weather, now, {"city": "Paris"}, world.run(weather, now, {"city": "Paris"})) == {
        "response": "It is 14 degrees and cloudy in Paris."}
    assert world.flags == []
    assert verify(task, None, _trajectory("14°C"), world).success
    _Llm.reply = "It is 31 degrees in Paris."
    world.simulator.respond(world, weather, now, {"city": "Paris"}, world.run(weather, now, {"city": "Paris"}))
    verdict = verify(task, None, _trajectory("14°C"), world)
    assert not verdict.success and verdict.failure_kind is FailureKind.infra and "31" in verdict.checks[-1].evidence


def test_an_llm_simulator_that_is_down_falls_back_to_the_structured_result():
    weather = families()["weather"]
    now = next(t for t in weather.tools if t.name == "weather_now")
    world = fresh_world()
    world.simulator = LlmSimulator("http://127.0.0.1:9", timeout=2)
    result = world.run(weather, now, {"city": "Paris"})
    assert world.simulator.respond(world, weather, now, {"city": "Paris"}, result) == result
    assert world.flags and world.flags[0].startswith("fallback")


def test_an_episode_with_simulated_tools_is_replayed_in_a_fresh_world_and_the_audit_judges_its_world(tmp_path):
    from planner_runtime.planners.demo import DemoPlanner
    from planner_runtime.runs.audit import audit, builtin_phones
    from planner_runtime.runs.replay import reexecute
    from planner_runtime.runs.run import open_device, run_goal
    from planner_runtime.trajectories.store import TrajectoryStore

    task = find_task("weather.cancel_subscription")
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        with open_device(None, "127.0.0.1", 5037, virtual=True, say=lambda _: None) as (device, identity):
            traj = run_goal(task.rendered_goal(), device=device, identity=identity, planner=DemoPlanner(task.rendered_demo()),
                            store=store, task=task)
            assert traj.verdict.success and traj.source is Source.simulated
            report = reexecute(traj, device, task)
        assert report.divergence is None and report.verdict.success and report.steps_replayed == 3
        with builtin_phones() as phones:
            (result,) = audit([task], phones, store)
        # doing nothing leaves both subscriptions: the world check fails it, and the baselines are judged on that world
        assert not result.verdict.success and result.verdict.failure_kind is FailureKind.agent
        assert result.listing is not None and result.listing.failure_kind is FailureKind.agent


def test_a_composite_over_simulated_tools_passes_numbers_as_numbers_and_answers_what_its_lookups_found():
    from planner_runtime.contract import FeedbackStatus, ToolCall
    from planner_runtime.harness.skills import CompositeStep, Parameter, Skill
    from planner_runtime.harness.tools import ToolContext, ToolSet
    from planner_runtime.harness.tools.composite import CompositeTool

    skill = Skill(name="watch-and-alert", description="Set a price alert, then read the alerts back",
                  parameters={"symbol": Parameter(), "price": Parameter(type="number")},
                  composite=(CompositeStep(tool="stock_alert_set", arguments={"symbol": "{symbol}", "direction": "below", "price": "{price}"}),
                             CompositeStep(tool="stock_alerts", arguments={})))
    tools = ToolSet([t for t in simulated_tools() if t.name in ("stock_alert_set", "stock_alerts")])
    tools = ToolSet([*tools, CompositeTool(skill, tools)])
    world = fresh_world()
    # no screen is read: the steps look at none (and this context has no phone)
    feedback = tools.execute(ToolCall(name=skill.tool_name, arguments={"symbol": "AMZN", "price": 170.5}), ToolContext(device=None, world=world))
    assert feedback.status is FeedbackStatus.ok, feedback
    assert [r["price"] for r in world.rows("stocks.alerts") if r["symbol"] == "AMZN"] == [170.5]
    found = feedback.result["results"]
    assert [f["tool"] for f in found] == ["stock_alert_set", "stock_alerts"]
    assert any(a["symbol"] == "AMZN" and a["price"] == 170.5 for a in found[1]["result"]["alerts"])


def test_run_with_a_simulator_phrases_the_services_answers_and_refuses_a_bad_address_in_one_line(llm, tmp_path):
    import subprocess
    import sys

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "run", "--task", "weather.now", "--planner", "demo",
                               "--store", str(tmp_path / "t.sqlite"), *args], capture_output=True, text=True, timeout=240)

    _Llm.reply = "Right now it is 14 degrees and cloudy in Paris."
    done = cli("--simulator", llm, "--json")
    assert done.returncode == 0, done.stderr
    traj = json.loads(done.stdout)
    assert traj["steps"][0]["feedback"]["result"] == {"response": "Right now it is 14 degrees and cloudy in Paris."}
    bad = cli("--simulator", "ftp://nowhere")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "http" in bad.stderr


def test_collect_and_bench_with_a_simulator_phrase_the_answers_and_a_resume_keeps_the_recorded_one(llm, tmp_path):
    import subprocess
    import sys

    from planner_runtime.trajectories.store import TrajectoryStore

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args, "--store", str(tmp_path / "t.sqlite"),
                               "--state-dir", str(tmp_path / "pool")], capture_output=True, text=True, timeout=240)

    _Llm.reply = "Right now it is 14 degrees and cloudy in Paris."
    done = cli("collect", "--task", "weather.now", "--planner", "demo", "-n", "1", "--simulator", llm, "--json")
    assert done.returncode == 0, done.stderr
    coll = json.loads(done.stdout)["collection"]
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        assert store.collection_spec(coll)["simulator"] == llm
        (traj,) = [store.get(i) for i in store.ids(collection=coll)]
    assert traj.steps[0].feedback.result == {"response": "Right now it is 14 degrees and cloudy in Paris."} and traj.verdict.success
    other = cli("collect", "--resume", coll, "--simulator", llm + "0")  # another server would make the counts mean nothing
    assert other.returncode == 2 and "differs from what this collection was started with" in other.stderr
    benched = cli("bench", "--task", "weather.now", "--planner", "scripted", "--script", str(_script(tmp_path)), "-n", "1",
                  "--simulator", llm, "--json")
    assert benched.returncode == 0, benched.stderr
    with TrajectoryStore(tmp_path / "t.sqlite") as store:
        (label, figures), = json.loads(benched.stdout)["planners"].items()
        (traj,) = [store.get(i) for i in store.ids(collection=figures["collection"])]
    assert traj.steps[0].feedback.result == {"response": "Right now it is 14 degrees and cloudy in Paris."}
    for verb in (("collect", "--task", "weather.now", "--planner", "demo"), ("bench", "--task", "weather.now")):
        bad = cli(*verb, "--simulator", "ftp://nowhere")
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "http" in bad.stderr, bad.stderr


def _script(folder):
    path = folder / "calls.json"
    path.write_text(json.dumps({"weather.now": [{"name": "weather_now", "arguments": {"city": "Paris"}},
                                                {"name": "finish", "arguments": {"answer": "14 degrees"}}]}))
    return path
