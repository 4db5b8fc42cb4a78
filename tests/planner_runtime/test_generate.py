"""`tasks generate`: a collection's failures become new executable tasks aimed at them, each kept
only after its spec, the audit and its own demo pass; the rest is reported and never written."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from planner_runtime.runs.generate import Gap, Gaps, compose, footprint, gate, phrasings
from planner_runtime.tasks.spec import Suite, builtin_suite, find_task, load_suite
from planner_runtime.trajectories.store import TrajectoryStore

FAILED = ["weather.now", "weather.subscribe_rain", "messages.send_text"]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def failed_collection(tmp_path_factory) -> tuple[Path, str]:
    """A real collection: a planner that gives up at once, on three tasks (all fail)."""
    root = tmp_path_factory.mktemp("gen")
    script = root / "noop.json"
    script.write_text(json.dumps({t: [{"name": "finish", "arguments": {"answer": "I do not know"}}] for t in FAILED}))
    args = ["collect", "--planner", "scripted", "--script", str(script), "--store", str(root / "t.sqlite"), "-n", "1",
            "--state-dir", str(root / "pool")]
    for task in FAILED:
        args += ["--task", task]
    proc = cli(*args)
    assert proc.returncode == 0 and "0 succeeded, 3 failed" in proc.stdout, proc.stdout  # every episode failed its verdict
    listed = json.loads(cli("trajectories", "list", "--store", str(root / "t.sqlite"), "--json").stdout)
    return root / "t.sqlite", listed[0]["collection"]


def test_generated_tasks_aim_at_the_failing_domains_and_pass_every_gate(failed_collection, tmp_path):
    store, collection = failed_collection
    out = tmp_path / "gen.yaml"
    proc = cli("tasks", "generate", "--collection", collection, "--store", str(store), "--out", str(out), "--max", "3",
               "--kind", "composition", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {g["name"] for g in report["gaps"]["domain"]} == {"weather", "messages"}
    assert all(g["rate"] == 1.0 for g in report["gaps"]["domain"])
    generated = load_suite(out).tasks  # the file is a suite `tasks check` and --suite read
    assert [t.id for t in generated] == report["accepted"] and len(generated) == 3
    assert cli("tasks", "check", str(out)).returncode == 0
    for task in generated:
        assert task.id.startswith("gen.") and task.source == "generated" and task.difficulty == "hard"
        assert task.domain in {"weather", "messages"}  # the first part comes from a failing domain
        parts = [t for t in builtin_suite().tasks if task.id.startswith(f"gen.{t.id}.") and "@" not in t.id]
        assert parts, task.id
        # held-out templates stay held out
        b = next(t for t in builtin_suite().tasks if "@" not in t.id and task.id.endswith(f".{t.id}"))
        assert task.split_name == ("test" if "test" in (parts[0].split_name, b.split_name) else "train")
        assert parts[0].domain != b.domain and not footprint(parts[0]) & footprint(b)
    # and a later run never overwrites what it wrote
    again = cli("tasks", "generate", "--collection", collection, "--store", str(store), "--out", str(out))
    assert again.returncode == 2 and "exists" in again.stderr and load_suite(out).tasks == generated


def test_recombinations_and_tight_variants_are_new_points_of_the_weak_templates_and_pass_every_gate(failed_collection, tmp_path):
    store, collection = failed_collection
    out = tmp_path / "more.yaml"
    proc = cli("tasks", "generate", "--collection", collection, "--store", str(store), "--out", str(out), "--max", "4",
               "--kind", "recombination", "--kind", "tight", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    generated = load_suite(out).tasks
    assert [t.id for t in generated] == report["accepted"] and cli("tasks", "check", str(out)).returncode == 0
    listed = {t.id: t for t in builtin_suite().tasks}
    recombined = [t for t in generated if not t.id.endswith(".tight")]
    tights = [t for t in generated if t.id.endswith(".tight")]
    assert recombined and tights
    for task in recombined:
        template = task.id.removeprefix("gen.").rsplit(".", 1)[0]
        instances = [t for t in listed.values() if t.template == template]
        assert task.domain in {"weather", "messages"} and task.source == "generated"
        assert task.split_name == instances[0].split_name  # held-out templates stay held out
        assert task.values not in [t.values for t in instances]  # a new point of the space ...
        assert min(sum(task.values[k] != t.values[k] for k in task.values) for t in instances) == 1  # ... one value away
        for name, value in task.values.items():
            assert value in {t.values[name] for t in instances}  # every value one the template already uses
    for task in tights:
        original = listed[task.id.removeprefix("gen.").removesuffix(".tight")]
        assert task.max_steps == original.max_steps > len(original.demo) and task.difficulty == "hard"
        assert task.checks[-1].max_steps_used == len(original.demo) and task.split_name == original.split_name
    # a tight variant fails an episode that wastes a step the original allowed
    task = tights[0]
    wasteful = [{"name": "list_apps", "arguments": {}}] + [c.model_dump() for c in task.rendered_demo()]
    script = tmp_path / "wasteful.json"
    script.write_text(json.dumps({task.id: wasteful}))
    ran = cli("collect", "--suite", str(out), "--task", task.id, "--planner", "scripted", "--script", str(script),
              "--store", str(tmp_path / "w.sqlite"), "-n", "1", "--state-dir", str(tmp_path / "pool"), "--json")
    assert ran.returncode == 0 and json.loads(ran.stdout)["failed"] == 1, ran.stdout + ran.stderr


def test_a_composition_renames_the_second_tasks_parameters_and_joins_demos_and_answers():
    a, b = find_task("weather.now"), find_task("clock.set_alarm")
    both = compose(a, b)
    assert set(both.params) == set(a.values) | {f"b_{k}" for k in b.values}
    assert [c.name for c in both.demo] == [c.name for c in a.demo[:-1]] + [c.name for c in b.demo[:-1]] + ["finish"]
    answer = both.rendered_demo()[-1].arguments["answer"]
    assert a.rendered_demo()[-1].arguments["answer"] in answer and b.rendered_demo()[-1].arguments["answer"] in answer
    assert len(both.checks) == len(a.checks) + len(b.checks)
    # checks of calls or answers touch no state: two tasks that both have them still compose
    calls = compose(find_task("weather.umbrella_tomorrow"), find_task("subagent.save_number_as_new_contact"))
    assert {c.called.tool for c in calls.checks if c.called is not None} == {"weather_forecast", "delegate"}
    with pytest.raises(ValueError, match="share state"):  # both read and wipe the SMS provider
        compose(find_task("messages.send_text"), find_task("messages.send_text@1"))


def test_the_gates_reject_an_unsolvable_task_and_one_passed_by_doing_nothing(tmp_path):
    good = compose(find_task("weather.now"), find_task("clock.set_alarm"))
    wrong_demo = good.model_copy(update={"id": "gen.wrong-demo", "demo": good.demo[:-2] + good.demo[-1:]})  # never sets the alarm
    lazy = find_task("weather.subscribe_rain").model_copy(update={"id": "gen.lazy", "checks": tuple(
        c.model_copy(update={"world": c.world.model_copy(update={"min": 0})}) for c in find_task("weather.subscribe_rain").checks)})
    with TrajectoryStore(tmp_path / "g.sqlite") as store:
        verdicts = gate([good, wrong_demo, lazy, good], ["weather.now"], store=store, workers=1, state_dir=tmp_path)
    assert [t.id for t in verdicts.accepted] == [good.id]
    why = dict(verdicts.rejected)
    assert why[good.id] == "the id is already a task"  # the second copy
    assert "demo fails its verifier" in why["gen.wrong-demo"]
    assert "passes without acting" in why["gen.lazy"]


class _Canned(BaseHTTPRequestHandler):
    answer = ""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": self.answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_llm_phrasings_keep_every_placeholder_or_are_refused_and_a_dead_endpoint_is_a_reason():
    suite = Suite(tasks=(find_task("weather.now"),))
    gaps = Gaps("c", 1, 1, {"domain": (Gap("domain", "weather", 1, 1),)})
    _Canned.answer = 'Sure: ["How hot is {city} at the moment?", "Temperature now?", "Is it warm in {city} today?"]'
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        made, refused = phrasings(suite, gaps, f"http://127.0.0.1:{server.server_port}", 5)
    finally:
        server.shutdown()
    assert [t.goal for t in made] == ["How hot is {city} at the moment?", "Is it warm in {city} today?"]
    assert all(t.checks == suite.tasks[0].checks and t.demo == suite.tasks[0].demo for t in made)
    assert len(refused) == 1 and "placeholders" in refused[0]
    made, refused = phrasings(suite, gaps, f"http://127.0.0.1:{server.server_port}", 5, timeout=2)
    assert made == [] and "no usable answer" in refused[0]


def test_generate_bad_input_is_one_line_and_exit_2(failed_collection, tmp_path):
    store, collection = failed_collection
    for args, words in ((("--collection", "coll_nope"), "no verified episodes"),
                        (("--collection", collection, "--llm", "ftp://x"), "http"),
                        (("--collection", collection, "--kind", "harder"), "choose from composition, recombination, tight"),
                        (("--collection", collection, "--store", str(tmp_path / "none.sqlite")), "no trajectory store")):
        if "--store" not in args:
            args = (*args, "--store", str(store))
        proc = cli("tasks", "generate", *args, "--out", str(tmp_path / "x.yaml"))
        assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not (tmp_path / "x.yaml").exists()


def test_generate_from_a_file_that_is_no_store_is_exit_2_and_writes_nothing(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database")
    proc = cli("tasks", "generate", "--collection", "c", "--store", str(garbage), "--out", str(tmp_path / "x.yaml"))
    assert proc.returncode == 2 and "cannot open trajectory store" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.yaml").exists() and garbage.read_text() == "not a database"
