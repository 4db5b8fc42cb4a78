"""A planner endpoint that is down is an infra fault, not the planner's failure.

Connection refused, a name that does not resolve, a connection reset, 5xx answers after the
client's retries, a body that is not JSON: the episode ends ``infra_error``, the verdict's
failure kind is ``infra``, no step is stored for the turn that got no answer, and the item is
not counted as done, so a collection runs it again. A planner that answers garbage is another
matter: that is the model's mistake, stored as feedback and judged.
"""

from __future__ import annotations

import pytest

from device_farm.virtual.source import VirtualSource
from device_farm.pool.pool import DevicePool
from planner_runtime.runs.collect import collect
from planner_runtime.contract import ErrorCode, FailureKind, FeedbackStatus, TrajectoryStatus
from planner_runtime.planners.openai.client import OpenAIPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import find_task
from planner_runtime.trajectories.query import Filter
from planner_runtime.harness.identity import EpisodeIdentity
from tests.planner_runtime.planners.fake_openai import FakeOpenAI, Reply, call_reply, closed_port_url, raw_reply, text_reply

OVERLOADED = raw_reply(b'{"error": {"message": "overloaded"}}', status=503)
PROXY_PAGE = raw_reply(b"<html><body>502 Bad Gateway</body></html>")


def _run(planner, device, device_ref, store):
    return run_goal("Set an alarm for 7:30", device=device, identity=EpisodeIdentity(device=device_ref, collection="coll_down", item="clock.set_alarm#0"),
                    planner=planner, store=store, task=find_task("clock.set_alarm"))


def _assert_infra_not_judged(traj, store):
    assert traj.status is TrajectoryStatus.infra_error
    assert traj.verdict.failure_kind is FailureKind.infra and not traj.verdict.success
    assert not any(s.feedback.status is not FeedbackStatus.ok for s in traj.steps)  # no agent error stored
    [summary] = store.query(Filter(collection="coll_down"))
    assert (summary.status, summary.failure_kind) == ("infra_error", "infra")
    assert store.completed_items("coll_down") == set()  # a resumed or retrying collection runs it again


@pytest.mark.parametrize("fault", ["refused", "dns", "reset", "5xx", "not json"])
def test_an_endpoint_that_is_down_ends_the_episode_as_infra(fault, device, device_ref, store):
    replies = {"reset": Reply(reset=True), "5xx": OVERLOADED, "not json": PROXY_PAGE}
    with FakeOpenAI(then=replies.get(fault, OVERLOADED)) as fake:
        url = {"refused": closed_port_url(), "dns": "http://planner.invalid:8000/v1"}.get(fault, fake.base_url)
        with OpenAIPlanner(url, "m", timeout=10, max_retries=1, backoff_s=0.01) as planner:
            traj = _run(planner, device, device_ref, store)
    _assert_infra_not_judged(traj, store)
    assert traj.steps == ()  # the turn that got no answer is not a step


def test_an_endpoint_that_goes_down_mid_episode_keeps_the_steps_before(device, device_ref, store):
    with FakeOpenAI([call_reply("read_screen", "{}")], then=Reply(reset=True)) as fake:
        with OpenAIPlanner(fake.base_url, "m", timeout=10, max_retries=1, backoff_s=0.01) as planner:
            traj = _run(planner, device, device_ref, store)
    _assert_infra_not_judged(traj, store)
    assert [s.tool_call.name for s in traj.steps] == ["read_screen"]


def test_an_endpoint_that_answers_garbage_is_the_models_failure(device, device_ref, store):
    with FakeOpenAI(then=text_reply('"I cannot help with alarms."')) as fake:
        with OpenAIPlanner(fake.base_url, "m", timeout=10) as planner:
            traj = _run(planner, device, device_ref, store)
    assert traj.status is TrajectoryStatus.truncated and traj.verdict.failure_kind is FailureKind.agent
    assert {s.feedback.error.code for s in traj.steps} == {ErrorCode.no_tool_call}
    assert store.completed_items("coll_down") == {"clock.set_alarm#0"}


def test_a_collection_retries_an_item_whose_planner_was_down(tmp_path, store):
    # The first attempt's two requests (one retry) are reset; the item's next attempt is answered.
    answers = [Reply(reset=True), Reply(reset=True), call_reply("set_alarm", '{"hour": 7, "minutes": 30}')]
    tasks = [find_task("clock.set_alarm")]
    with FakeOpenAI(answers) as fake, DevicePool([VirtualSource(2)], state_dir=tmp_path / "pool") as pool:
        planner_for = lambda task: OpenAIPlanner(fake.base_url, "m", timeout=10, max_retries=1, backoff_s=0.01)  # noqa: E731
        coll, progress = collect(tasks, pool=pool, store=store, planner_for=planner_for, workers=1)
    assert (progress.success, progress.failed, progress.infra, progress.gave_up) == (1, 0, 1, [])
    trajs = [store.get(i) for i in store.ids(collection=coll)]
    assert sorted(t.status.value for t in trajs) == ["finished", "infra_error"]


CONTEXT_FULL = raw_reply(b'{"error": {"message": "This model\'s maximum context length is 8192 tokens. However, you requested 9100 tokens.", '
                         b'"type": "invalid_request_error", "code": "context_length_exceeded"}}', status=400)


def test_a_conversation_that_outgrows_the_context_ends_truncated_not_raising(device, device_ref, store):
    # A model that piled up a long history is at a limit, like max_steps: the episode ends
    # truncated and is judged, it does not raise out of the episode (and stop a collection).
    with FakeOpenAI([call_reply("read_screen", "{}")], then=CONTEXT_FULL) as fake:
        with OpenAIPlanner(fake.base_url, "m", timeout=10, max_retries=1, backoff_s=0.01) as planner:
            traj = _run(planner, device, device_ref, store)
    assert traj.status is TrajectoryStatus.truncated
    assert [s.tool_call.name for s in traj.steps] == ["read_screen"]
    assert traj.verdict.failure_kind is FailureKind.agent and not traj.verdict.success
    assert store.get(traj.id).status is TrajectoryStatus.truncated
