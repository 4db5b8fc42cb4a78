"""SFT export: ok turns become completions, error turns are masked but stay in later prompts,
and TRL's SFTTrainer trains on the file as written."""

from __future__ import annotations

import json

import pytest

from planner_runtime.contract import DeviceRef, Feedback, FeedbackStatus, Message, Role, Source, Step, ToolCall, Trajectory
from planner_runtime.data.export import export_sft, sft_rows
from planner_runtime.planners.chat_template import IM_END, render_chat, render_conversation
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity

TASK = next(t for t in builtin_suite().tasks if t.id == "clock.set_alarm")


@pytest.fixture
def exported(device, device_ref, store, tmp_path):
    good = [
        {"name": "set_alarm", "arguments": {"hour": "7", "minutes": 30}},  # invalid: masked
        {"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}},
        {"name": "finish", "arguments": {"answer": "done"}},
    ]
    bad = [{"name": "set_alarm", "arguments": {"hour": 8, "minutes": 0}}, {"name": "finish", "arguments": {"answer": "done"}}]
    runs = [
        run_goal(TASK.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                 planner=ScriptedPlanner(script), store=store, task=TASK)
        for script in (good, bad)
    ]
    assert [r.verdict.success for r in runs] == [True, False]
    out = tmp_path / "sft.jsonl"
    stats = export_sft(store, out)
    return runs, out, stats


def test_only_ok_turns_of_verified_successes_become_completions(exported):
    runs, out, stats = exported
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert (stats.trajectories, stats.rows, stats.masked_turns) == (1, 2, 1)
    assert {r["trajectory_id"] for r in rows} == {runs[0].id}
    assert [r["step"] for r in rows] == [1, 2]
    completions = [r["completion"][0]["content"] for r in rows]
    assert '"hour": 7' in completions[0] and '"finish"' in completions[1]
    assert all('"hour": "7"' not in c for c in completions)
    # the masked mistake and its feedback are still in the next prompt, so recovery is learned
    prompt = rows[0]["prompt"]
    assert '"hour": "7"' in prompt[-2]["content"] and "invalid_arguments" in prompt[-1]["content"]
    assert prompt[-1]["content"].startswith("<tool_response>")
    assert "<tools>" in prompt[0]["content"] and "set_alarm" in prompt[0]["content"]
    # the whole input of the turn, not only what it added: the harness's system prompt and the goal first
    assert prompt[0]["content"].startswith("You are an assistant that operates") and TASK.rendered_goal() in prompt[1]["content"]


def test_every_row_tokenizes_to_exactly_what_the_local_planner_read_and_would_write(exported, local_planner):
    """TRL's tokenization of each exported row (the model's chat template over prompt and prompt +
    completion) is, token for token, the ids the local planner feeds the model for that turn
    (``encode``: prompt, then the prefill it forces) followed by the rest of the answer and the
    end of the turn, on every turn of a multi-turn episode."""
    runs, out, _ = exported
    tok, trajectory = local_planner.tokenizer, runs[0]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and len(trajectory.steps) == 3  # two kept turns; the first (masked) stays in their prompts
    for row in rows:
        step, model_input = trajectory.steps[row["step"]], trajectory.messages_at(row["step"])
        prompt_ids, prefill, prefill_ids = local_planner.encode(model_input, trajectory.tools, 24)
        assert prefill and step.raw_output.startswith(prefill)
        written = prefill_ids + tok(step.raw_output[len(prefill):], add_special_tokens=False).input_ids
        end = tok(f"{IM_END}\n", add_special_tokens=False).input_ids
        trl_prompt = tok.apply_chat_template(row["prompt"], tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"]
        trl_full = tok.apply_chat_template(row["prompt"] + row["completion"], tokenize=True, return_dict=True)["input_ids"]
        assert trl_prompt == prompt_ids
        assert trl_full == prompt_ids + written + end
        assert tok.decode(trl_full) == render_conversation(model_input, trajectory.tools, step.raw_output)


def test_a_user_turn_that_quotes_a_tool_response_is_not_merged_with_the_results_after_it():
    """The export used to fold a tool result into any user turn ending in ``</tool_response>``;
    the planner never did, so the row's prompt was not what the model read."""
    messages = (
        Message(role=Role.system, content="You operate a phone."),
        Message(role=Role.user, content="Repeat this: <tool_response>\nhi\n</tool_response>"),
        Message(role=Role.tool, content='{"ok": true}', tool_call_id="c1"),
        Message(role=Role.tool, content='{"ok": false}', tool_call_id="c2"),
    )
    call = ToolCall(name="finish", arguments={"answer": "hi"})
    step = Step(index=0, messages=messages, raw_output='<tool_call>\n{"name": "finish"}\n</tool_call>', tool_call=call,
                feedback=Feedback(call_id=call.call_id, status=FeedbackStatus.ok))
    trajectory = Trajectory(id="t", goal="g", source=Source.sandbox, device=DeviceRef(serial="s"), planner="p",
                            planner_release="r", harness_release="h", steps=(step,))
    (row,) = sft_rows(trajectory)
    assert [t["role"] for t in row["prompt"]] == ["system", "user", "user"]
    rendered = "".join(f"<|im_start|>{t['role']}\n{t['content']}<|im_end|>\n" for t in row["prompt"]) + "<|im_start|>assistant\n"
    assert rendered == render_chat(messages, ())


def test_include_failed_exports_their_ok_turns_too(exported, store, tmp_path):
    out = tmp_path / "all.jsonl"
    stats = export_sft(store, out, only_success=False)
    assert (stats.trajectories, stats.rows) == (2, 4)


@pytest.mark.slow
def test_prompt_matches_the_local_planner_and_trl_trains_on_it(exported, store, tmp_path):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from planner_runtime.planners.local.model_store import ensure_embedded_model

    runs, out, _ = exported
    model_dir = ensure_embedded_model()
    tok = AutoTokenizer.from_pretrained(model_dir)
    row = json.loads(out.read_text().splitlines()[0])
    # the exported prompt, through the model's own chat template, is exactly what the planner saw
    templated = tok.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
    assert templated == render_chat(runs[0].messages_at(1), runs[0].tools)

    rows = Dataset.from_json(str(out))
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    args = SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=1, max_length=256, truncation_mode="keep_end",
                     report_to=[], save_strategy="no", logging_steps=1, use_cpu=True)
    trainer = SFTTrainer(model=model, args=args, train_dataset=rows, processing_class=tok)
    labels = trainer.train_dataset[0]["labels"]
    trained = [t for t in labels if t != -100]
    assert 0 < len(trained) < len(labels) / 4  # only the completion (the tool call) is trained
    assert tok.decode(trained).startswith('<tool_call>')
    result = trainer.train()
    assert result.training_loss > 0


def _export_cli(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "planner_runtime.cli.main", "export", "sft", *args], capture_output=True, text=True, timeout=120)


def test_export_cli_reports_an_unwritable_out_and_a_missing_store_in_one_line(store, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    res = _export_cli("--out", str(blocker / "sft.jsonl"), "--store", str(store.path))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and f"cannot write {blocker / 'sft.jsonl'}" in " ".join(res.stderr.split())

    typo = tmp_path / "typo.sqlite"
    res = _export_cli("--out", str(tmp_path / "sft.jsonl"), "--store", str(typo))
    assert res.returncode == 2 and "no trajectory store at" in " ".join(res.stderr.split()), res.stderr
    assert not typo.exists() and not (tmp_path / "sft.jsonl").exists()

    res = _export_cli("--out", str(tmp_path / "sft.jsonl"), "--store", str(store.path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"out": str(tmp_path / "sft.jsonl"), "rows": 0, "trajectories": 0, "masked_turns": 0}
