"""ask_user: the answer comes from the task's scripted user, a file of answers, a callback (the
person at the terminal), or nobody — then the planner is told no user is available."""

from __future__ import annotations

import pytest

from planner_runtime.contract import ErrorCode, FeedbackStatus
from planner_runtime.errors import ConfigError
from planner_runtime.harness.tools.user import ScriptedAnswers, chain
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import TaskSpec
from planner_runtime.harness.identity import EpisodeIdentity

ASK = {"name": "ask_user", "arguments": {"question": "What time should the alarm be?"}}


def _alarm_task(**extra) -> TaskSpec:
    return TaskSpec.model_validate({
        "id": "clock.ask_time", "goal": "Set an alarm", "domain": "clock", "params": {"hour": 7, "minute": 30},
        "setup": [{"content_delete": {"uri": "content://com.android.deskclock/alarms"}}],
        "checks": [
            {"content": {"uri": "content://com.android.deskclock/alarms", "where": "hour={hour} AND minutes={minute}"}},
            {"asked_before": {"tool": "set_alarm"}},
        ],
        **extra,
    })


def _run(script, device, device_ref, store, task=None, **kw):
    return run_goal("Set an alarm", device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=task, **kw)


def test_the_tasks_scripted_user_answers_and_the_answer_is_acted_on(device, device_ref, store):
    task = _alarm_task(user_answers={"what time|when": "{hour}:{minute:02d} please"})
    script = [ASK, {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, {"name": "finish", "arguments": {"answer": "set"}}]
    traj = _run(script, device, device_ref, store, task=task)
    fb = traj.steps[0].feedback
    assert fb.status is FeedbackStatus.ok and fb.result == {"question": "What time should the alarm be?", "answer": "7:30 please"}
    assert "7:30 please" in traj.steps[1].messages[-1].content  # the planner read the reply
    assert traj.verdict.success and "ask_user at step 1" in traj.verdict.checks[1].evidence


def test_acting_without_asking_fails_the_asked_before_check(device, device_ref, store):
    task = _alarm_task(user_answers={"time": "7:30"})
    script = [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, ASK, {"name": "finish", "arguments": {"answer": "set"}}]
    traj = _run(script, device, device_ref, store, task=task)
    assert [c.passed for c in traj.verdict.checks] == [True, False]


def test_without_a_user_the_planner_is_told_so(device, device_ref, store):
    traj = _run([ASK, {"name": "finish", "arguments": {"answer": "I need a time"}}], device, device_ref, store)
    fb = traj.steps[0].feedback
    assert fb.status is FeedbackStatus.error and fb.error.code is ErrorCode.no_user
    assert "no user is available" in fb.error.hint


def test_a_callback_answers_what_the_task_does_not(device, device_ref, store):
    asked = []

    def person(question: str) -> str:
        asked.append(question)
        return "6:45"

    task = _alarm_task(user_answers={"label": "Gym"})  # does not match the question asked
    traj = _run([ASK, {"name": "finish", "arguments": {"answer": "ok"}}], device, device_ref, store, task=task, ask=person)
    assert asked == ["What time should the alarm be?"]
    assert traj.steps[0].feedback.result["answer"] == "6:45"


def test_answers_file_first_matching_pattern_wins(tmp_path):
    path = tmp_path / "answers.yaml"
    path.write_text("'(?i)which (phone )?number': 'the mobile one'\ntime: '7:30'\n'.*': 'yes'\n")
    answers = ScriptedAnswers.load(path)
    assert answers("Which number should I use?") == "the mobile one"
    assert answers("What TIME?") == "7:30"
    assert answers("Shall I go on?") == "yes"
    assert chain(None, ScriptedAnswers.from_mapping({"x": "1"}), answers)("nothing about x here") == "1"
    assert chain(None, None) is None


@pytest.mark.parametrize("text, message", [("- just a list\n", "mapping"), ("'([': 'x'\n", "bad question pattern")])
def test_bad_answers_file_is_a_config_error(tmp_path, text, message):
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ScriptedAnswers.load(path)
