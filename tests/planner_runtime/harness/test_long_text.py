"""Long text through the real tools on the virtual phone: a note body longer than one adb
request works, one longer than a phone takes is the planner's error with a hint, and neither
ends the episode as an infra fault."""

from __future__ import annotations

from planner_runtime.contract import ErrorCode, FeedbackStatus, TrajectoryStatus
from planner_runtime.harness.tools.notes import NOTES_URI
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.harness.identity import EpisodeIdentity


def _body(size: int) -> str:
    line = "Line with 'quotes', \"doubles\", $HOME, `ticks`, # hash and émoji 🎉\n"
    return (line * (size // len(line) + 1))[:size]


def _create_note(text: str, device, device_ref, store):
    script = [{"name": "create_note", "arguments": {"title": "Long", "text": text}},
              {"name": "finish", "arguments": {"answer": "Done"}}]
    return run_goal("Save this long note", device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store)


def test_a_note_longer_than_an_adb_request_is_saved_whole(device, device_ref, store):
    body = _body(70 * 1024)
    traj = _create_note(body, device, device_ref, store)
    assert traj.status == TrajectoryStatus.finished
    assert traj.steps[0].feedback.status == FeedbackStatus.ok, traj.steps[0].feedback
    saved = device.shell(["content", "query", "--uri", NOTES_URI, "--projection", "text", "--where", "title='Long'"])
    assert saved.output == f"Row: 0 text={body}\n"  # the whole body, read back as `content query` prints it


def test_a_note_longer_than_a_phone_takes_is_the_planners_error(device, device_ref, store):
    traj = _create_note(_body(200 * 1024), device, device_ref, store)
    assert traj.status == TrajectoryStatus.finished  # not infra_error: the episode went on to finish
    error = traj.steps[0].feedback.error
    assert error is not None and error.code == ErrorCode.invalid_arguments
    assert "KiB" in error.hint and "limit" in error.hint
    assert device.shell("echo ok").output == "ok\n"
