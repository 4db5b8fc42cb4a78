"""The trajectory viewer, opened in headless Chromium: steps, checks and screenshots are on the
page, and text planted on the phone's screen stays text (no script runs, no tag appears)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from planner_runtime.contract import (
    DeviceRef, Feedback, FeedbackStatus, Message, Observation, Role, Source, Step, ToolCall, Trajectory, TrajectoryStatus,
    Usage,
)
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import load_suite
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.viewer import render_page
from planner_runtime.harness.identity import EpisodeIdentity

PLANTED = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return path


def _browser(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp / 'chromium-profile'}", *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )


def dump_dom(chromium: str, page: Path) -> str:
    res = _browser(chromium, page.parent, "--dump-dom", page.resolve().as_uri())
    assert res.returncode == 0 and "<html" in res.stdout, res.stderr[-2000:]
    return res.stdout


class Tags(HTMLParser):
    """Elements of a DOM dump and the text in them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._in_title = False
        self.title = ""

    def handle_starttag(self, tag, attrs):  # noqa: ANN001 - HTMLParser's signature
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):  # noqa: ANN001
        self._in_title = False

    def handle_data(self, data):  # noqa: ANN001
        self.text.append(data)
        if self._in_title:
            self.title += data

    def count(self, tag: str, **attrs: str) -> int:
        return sum(1 for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items()))


def _parse(dom: str) -> Tags:
    tags = Tags()
    tags.feed(dom)
    return tags


SUITE = """\
tasks:
  - id: clock.label_check
    goal: "Turn off the alarm labelled {label}"
    params: {label: "wake"}
    domain: clock
    setup:
      - content_delete: {uri: "content://com.android.deskclock/alarms"}
      - content_insert:
          uri: "content://com.android.deskclock/alarms"
          values: {hour: 6, minutes: 15, enabled: 1, label: "%s"}
    checks:
      - name: the alarm is off
        content: {uri: "content://com.android.deskclock/alarms", where: "enabled=0"}
      - called: {tool: tap, max: 0}
""" % PLANTED.replace('"', '\\"')


def test_real_episode_page_in_chromium(tmp_path, device, device_ref, chromium):
    """An episode on the virtual phone whose screen shows a planted script; the page shows every
    step and check, the script text is plain text, and nothing ran."""
    task = load_suite(_write(tmp_path / "suite.yaml", SUITE)).tasks[0]
    planner = ScriptedPlanner([
        ToolCall(name="open_app", arguments={"app": "Clock"}),
        ToolCall(name="read_screen", arguments={}),
        "I will answer now <b>bold?</b>",  # malformed output: an error step
        ToolCall(name="finish", arguments={"answer": f"Could not: {PLANTED}"}),
    ])
    db = tmp_path / "t.sqlite"
    with TrajectoryStore(db) as store:
        traj = run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                        planner=planner, store=store, task=task)
    assert any(PLANTED.split("<img")[0] in (s.feedback.observation.screen if s.feedback.observation else "") for s in traj.steps)
    out = tmp_path / "page.html"
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "view", traj.id, "--store", str(db), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"wrote {out} (1 trajectory, 4 steps)" in res.stdout

    dom = _parse(dump_dom(chromium, out))
    text = "".join(dom.text)
    assert dom.title == task.rendered_goal()  # the planted script did not rename the page
    assert dom.count("script") == 0 and dom.count("img", src="x") == 0
    assert PLANTED in text  # shown as text, verbatim
    assert dom.count("section") == 4 and [a["data-step"] for t, a in dom.tags if t == "section"] == ["0", "1", "2", "3"]
    assert "open_app" in text and "read_screen" in text and "no_tool_call" in text
    assert "the alarm is off" in text and "0 row(s)" in text and "tap called 0 time(s)" in text
    assert "failed (agent)" in text and device_ref.serial in text
    assert dom.count("link") == 0 and dom.count("img") == 0  # no screenshot was taken: nothing to load


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _record(screenshot: str | None) -> Trajectory:
    steps = []
    for i, (tool, status) in enumerate([("read_screen", FeedbackStatus.ok), ("delete_contact", FeedbackStatus.blocked)]):
        call = ToolCall(name=tool, arguments={"name": "</pre><h1>x</h1>"} if i else {})
        obs = Observation(package="com.android.contacts", screen=f"[0] TextView '{PLANTED}'", screenshot=screenshot) if i == 0 else None
        steps.append(Step(
            index=i, messages=(Message(role=Role.user, content=f"turn {i} & <more>"),), raw_output=f"<tool_call>{tool}</tool_call>",
            tool_call=call, usage=Usage(prompt_tokens=100 + i, completion_tokens=7), plan_seconds=0.25, act_seconds=0.05,
            feedback=Feedback(call_id=call.call_id, status=status, observation=obs),
        ))
    return Trajectory(goal="Remove <Bob> & co", task_id="contacts.remove", source=Source.sandbox,
                      device=DeviceRef(serial="emulator-5554", model="Pixel 7"), planner="local",
                      planner_release="smollm2-135m@1", harness_release="h-7", status=TrajectoryStatus.finished,
                      steps=tuple(steps), usage=Usage(prompt_tokens=201, completion_tokens=14))


def test_screenshot_is_embedded_and_page_makes_no_requests(tmp_path, device, chromium):
    artifacts = pytest.importorskip("planner_runtime.trajectories.artifacts")
    store = artifacts.ArtifactStore(tmp_path / "artifacts")
    ref = store.put(device.screenshot(), "png")
    traj = _record(ref)
    db = tmp_path / "t.sqlite"
    with TrajectoryStore(db) as s:
        s.begin(traj)
        for step in traj.steps:
            s.append_step(traj.id, step)
    out = tmp_path / "shot.html"
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "view", traj.id, "--store", str(db), "--out", str(out),
                          "--artifacts", str(tmp_path / "artifacts")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    html = out.read_text()
    assert "data:image/png;base64," in html and "http://" not in html and "https://" not in html
    dom = _parse(dump_dom(chromium, out))
    imgs = [a for t, a in dom.tags if t == "img"]
    assert len(imgs) == 1 and imgs[0]["src"].startswith("data:image/png;base64,")
    assert dom.count("script") == 0 and dom.count("h1") == 1  # the planted </pre><h1> stayed text
    png = tmp_path / "page.png"
    shot = _browser(chromium, tmp_path, "--window-size=1280,1600", f"--screenshot={png}", out.resolve().as_uri())
    assert shot.returncode == 0 and png.read_bytes()[:4] == b"\x89PNG", shot.stderr[-2000:]


def test_missing_screenshot_is_said_not_fetched():
    html = render_page([_record("0" * 64 + ".png")], screenshots=lambda ref: None)
    assert "not available" in html and "<img" not in html
    assert "Remove &lt;Bob&gt; &amp; co" in html and "<Bob>" not in html
    assert "201 prompt + 14 output" in html and "smollm2-135m@1" in html and "h-7" in html


def test_a_page_counts_the_sub_agents_on_it_in_their_parents_tokens():
    parent = _record(None)
    child = _record(None).model_copy(update={"parent": parent.id, "usage": Usage()})  # cut off: its steps count
    grandchild = _record(None).model_copy(update={"parent": child.id})
    html = render_page([parent, child, grandchild])
    assert "603 prompt + 42 output — own 201 prompt + 14 output, sub-agents (2 episodes) 402 prompt + 28 output" in html
    assert "402 prompt + 28 output — own 201 prompt + 14 output, sub-agents (1 episode) 201 prompt + 14 output" in html


def test_failed_batch_page_lists_each_trajectory(tmp_path, device, device_ref, chromium):
    db = tmp_path / "t.sqlite"
    suite = load_suite(_write(tmp_path / "suite.yaml", SUITE))
    with TrajectoryStore(db) as store:
        for answer in ("first", "second"):
            run_goal("Turn off the alarm", device=device, identity=EpisodeIdentity(device=device_ref),
                     planner=ScriptedPlanner([ToolCall(name="finish", arguments={"answer": answer})]), store=store,
                     task=suite.tasks[0])
        ok = run_goal("Say hi", device=device, identity=EpisodeIdentity(device=device_ref),
                      planner=ScriptedPlanner([ToolCall(name="finish", arguments={"answer": "hi"})]), store=store)
    out = tmp_path / "failed.html"
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "view", "--failed", "--store", str(db), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "(2 trajectories, 2 steps)" in res.stdout
    dom = _parse(dump_dom(chromium, out))
    assert dom.count("article") == 2 and dom.count("li") == 2 and ok.id not in "".join(dom.text)
    bad = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "view", "--store", str(db)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "give a trajectory id or --failed" in bad.stderr


def test_delegated_episodes_are_on_the_parent_page(tmp_path):
    parent = _record(None)
    child = Trajectory(goal="Find Bob's number", source=Source.sandbox, device=parent.device, planner="local",
                       parent=parent.id, status=TrajectoryStatus.finished, answer="+1 555 0100")
    db = tmp_path / "t.sqlite"
    with TrajectoryStore(db) as s:
        for traj in (parent, child):
            s.begin(traj)
            for step in traj.steps:
                s.append_step(traj.id, step)
    out = tmp_path / "p.html"
    res = subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "view", parent.id, "--store", str(db), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "(2 trajectories, 2 steps)" in res.stdout, res.stderr
    html = out.read_text()
    assert f'<article class="trajectory" id="{child.id}"' in html and f"<th>delegated by</th><td>{parent.id}</td>" in html
    assert "<title>Remove &lt;Bob&gt; &amp; co</title>" in html


def test_each_step_shows_the_model_input_its_turn_added(device, device_ref, store):
    from planner_runtime.contract import Source

    traj = run_goal("Open the clock", device=device, identity=EpisodeIdentity(device=device_ref, source=Source.sandbox), store=store,
                    planner=ScriptedPlanner([{"name": "read_screen", "arguments": {}}, {"name": "open_app", "arguments": {"app": "Clock"}}]))
    html = render_page([store.get(traj.id)])
    # the first turn reads the system prompt and goal; each later one the last answer and its result, of all so far
    assert [f"{new} new message(s) of {total}" in html for new, total in ((2, 2), (2, 4), (2, 6))] == [True] * 3
    assert html.count("Goal: Open the clock") == 1
