"""The screenshot tool on the virtual phone: the PNG lands in the content-addressed artifact store
under PLANNER_AGENT_HOME, and the feedback's observation points at it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from planner_runtime.trajectories.artifacts import ArtifactStore, png_size
from planner_runtime.contract import FeedbackStatus, ToolCall
from planner_runtime.errors import StoreError
from planner_runtime.harness.toolbox import default_toolset, with_skills
from planner_runtime.harness.tools import ToolContext
from planner_runtime.harness.tools.screenshot import Screenshot
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.harness.identity import EpisodeIdentity


def test_screenshot_is_stored_once_by_content_and_referenced(device):
    tools = with_skills(default_toolset(), [], [Screenshot()])
    ctx = ToolContext(device=device)
    first = tools.execute(ToolCall(name="screenshot"), ctx)
    second = tools.execute(ToolCall(name="screenshot"), ctx)

    assert first.status is FeedbackStatus.ok, first
    ref = first.result["screenshot"]
    assert first.observation.screenshot == ref and "app:" in first.observation.screen  # picture + elements
    digest = ref.removesuffix(".png")
    path = Path(os.environ["PLANNER_AGENT_HOME"]) / "artifacts" / digest[:2] / ref
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest and data == device.screenshot()
    assert png_size(data) == (first.result["width"], first.result["height"]) and first.result["width"] > 0
    assert second.result["screenshot"] == ref  # the same screen: the same artifact, one file
    assert len(list(path.parent.iterdir())) == 1


def test_a_changed_screen_is_a_new_artifact(device, tmp_path):
    store = ArtifactStore(tmp_path / "a")
    tools, ctx = with_skills(default_toolset(), [], [Screenshot(store)]), ToolContext(device=device)
    home = tools.execute(ToolCall(name="screenshot"), ctx).result["screenshot"]
    tools.execute(ToolCall(name="open_app", arguments={"app": "Clock"}), ctx)
    clock = tools.execute(ToolCall(name="screenshot"), ctx).result["screenshot"]
    assert home != clock and home in store and clock in store
    assert store.get(clock)[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_goal_offers_screenshot_and_keeps_the_reference_in_the_trajectory(device, device_ref, store):
    traj = run_goal("What is on my screen?", device=device, identity=EpisodeIdentity(device=device_ref), store=store,
                    planner=ScriptedPlanner([{"name": "screenshot"}, {"name": "finish", "arguments": {"answer": "home"}}]))
    ref = store.get(traj.id).steps[0].feedback.observation.screenshot
    assert ref and ref in ArtifactStore.default()


@pytest.mark.parametrize("ref", ["../../trajectories.sqlite", "abc.png", "0" * 64 + ".png/../x", "0" * 64])
def test_only_artifact_references_resolve(tmp_path, ref):
    with pytest.raises(StoreError):
        ArtifactStore(tmp_path).path(ref)
