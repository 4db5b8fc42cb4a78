"""The local planner: lazy, frozen, answers with a tool-call block, deterministic."""

from __future__ import annotations

import pytest

from planner_runtime.contract import Message, Role
from planner_runtime.errors import ModelProvisionError
from planner_runtime.planners import PlannerOutput, Sampling, create
from planner_runtime.planners.local.planner import LocalPlanner


def test_construction_reads_nothing_and_a_missing_model_fails_on_first_use(tmp_path, alarm_chat, two_tools):
    planner = create("local", model=str(tmp_path / "no-such-model"))
    assert isinstance(planner, LocalPlanner) and not planner.loaded
    assert planner.release == "local:no-such-model"
    with pytest.raises(ModelProvisionError, match="not found"):
        planner.plan(alarm_chat, two_tools)


@pytest.mark.slow
def test_the_loaded_model_is_frozen(planner):
    assert not planner.model.training
    assert all(not p.requires_grad for p in planner.model.parameters())
    assert planner.release.startswith("local:SmolLM2-135M-Instruct@")


@pytest.mark.slow
def test_plan_answers_with_a_tool_call_block_and_counts_tokens(planner, alarm_chat, two_tools):
    out = planner.plan(alarm_chat, two_tools)
    assert isinstance(out, PlannerOutput)
    assert out.text.startswith("<tool_call>")
    assert out.usage.prompt_tokens > 100 and 0 < out.usage.completion_tokens <= 24 + 10
    assert out.timings["prefill_s"] > 0 and out.timings["generate_s"] >= 0
    assert out.tool_calls or out.errors  # whatever the model wrote, the harness gets something to act on


@pytest.mark.slow
def test_same_input_same_output_with_and_without_the_prefix_cache(planner, model_cache, alarm_chat, two_tools):
    first = planner.plan(alarm_chat, two_tools)
    second = planner.plan(alarm_chat, two_tools)  # reuses the previous call's KV cache
    assert planner.last_reused_tokens >= second.usage.prompt_tokens
    uncached = LocalPlanner(cache_dir=model_cache, max_new_tokens=24, reuse_prefix_cache=False)
    third = uncached.plan(alarm_chat, two_tools)
    assert uncached.last_reused_tokens == 0
    assert first.text == second.text == third.text


@pytest.mark.slow
def test_a_longer_conversation_reuses_the_earlier_turns(planner, alarm_chat, two_tools):
    first = planner.plan(alarm_chat, two_tools)
    followup = [
        *alarm_chat,
        Message(role=Role.assistant, content=first.text),
        Message(role=Role.tool, content='{"status": "ok"}'),
    ]
    planner.plan(followup, two_tools)
    # system turn, tools and the user turn are not computed again
    assert planner.last_reused_tokens >= first.usage.prompt_tokens - 4


@pytest.mark.slow
def test_seeded_sampling_repeats_and_the_seed_matters(planner, alarm_chat, two_tools):
    def sample(seed: int) -> str:
        return planner.plan(alarm_chat, two_tools, sampling=Sampling(temperature=1.5, max_new_tokens=12, seed=seed)).text

    runs = [sample(7), sample(7)] + [sample(s) for s in (1, 2, 3)]
    assert runs[0] == runs[1]
    assert len(set(runs)) > 1


def test_the_local_planner_package_imports_nothing_above_planners():
    # serve is built on the local planner, never the reverse: the batch decoder once imported
    # the server's schema module, tying the planners to the HTTP layer
    import subprocess
    import sys

    modules = ", ".join(f"planner_runtime.planners.local.{m}" for m in (
        "attention", "batch", "decoding", "grammar", "kv_cache", "model", "model_store", "planner", "prefix_cache", "prefix_tree"))
    script = (f"import sys, importlib\nfor m in '{modules}'.split(', '): importlib.import_module(m)\n"
              "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('planner_runtime.') and m.count('.') >= 1}))")
    layers = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    for above in ("serving", "harness", "runs", "cli", "training"):
        assert f"'{above}'" not in layers, layers
