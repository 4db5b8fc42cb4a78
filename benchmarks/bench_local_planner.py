"""Latency of the local planner: model provisioning, loading, and one planning step.

Measures the first-use GGUF conversion (in a throw-away cache), loading from the safetensors
cache, and steps on a short and a ~1.5k-token agent prompt with up to 40 new tokens: without the
prefix KV cache, with it on an identical prompt, and with it on the next turn of the same episode
(the realistic case: system prompt, tools and history unchanged, one tool result appended).
Steps are grammar-constrained (the planner's default) unless said otherwise; a last block runs the
long prompt constrained and unconstrained side by side, with the forward passes that the
grammar's forced tokens saved. The model computes with the threads the planner chooses
(``PLANNER_AGENT_THREADS``, else the cores this process is given), printed first, so the figures
are those of ``run``, ``serve`` and ``collect`` on the same machine.

Every step keeps its token record (ids, logprobs, the sampled mask) as ``run`` does;
``--no-token-records`` times steps without it.

    python benchmarks/bench_local_planner.py [--skip-cold] [--device cpu|auto] [--repeat 3] [--no-token-records]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners import Sampling
from planner_runtime.planners.local import model_store
from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL
from planner_runtime.planners.local.planner import LocalPlanner
from planner_runtime.planners.local.threads import ENV_THREADS, available_cores

APPS = ["clock", "contacts", "messages", "calendar", "settings", "camera", "maps", "notes", "files", "phone"]


def tools(n: int) -> list[ToolSpec]:
    specs = []
    for i in range(n):
        app = APPS[i % len(APPS)]
        specs.append(
            ToolSpec(
                name=f"{app}_action_{i}",
                description=f"Perform action {i} in the {app} app. Use it only when the user asks about {app}; "
                "it returns the resulting state of the app and the visible screen.",
                parameters={
                    "type": "object",
                    "properties": {
                        "target": {"type": "string", "description": f"what in {app} to act on"},
                        "value": {"type": "string", "description": "the new value, if any"},
                        "confirm": {"type": "boolean", "description": "ask the user first"},
                    },
                    "required": ["target"],
                },
            )
        )
    return specs


def chat(turns: int) -> list[Message]:
    messages = [
        Message(role=Role.system, content="You operate an Android phone for the user. Answer with one tool call."),
        Message(role=Role.user, content="Move my 3 pm meeting with Dana to Friday and text her about it."),
    ]
    for i in range(turns):
        messages.append(
            Message(role=Role.assistant, content=f'<tool_call>\n{{"name": "calendar_action_3", "arguments": {{"target": "event {i}"}}}}\n</tool_call>')
        )
        messages.append(Message(role=Role.tool, content=f'{{"status": "ok", "screen": "Calendar • week view • event {i} selected"}}'))
    return messages


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-cold", action="store_true", help="do not time the first-use conversion (~20 s)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-token-records", action="store_true", help="steps without PlannerOutput.tokens")
    args = ap.parse_args()
    sampling = Sampling(max_new_tokens=40)

    if not args.skip_cold:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            model_store.ensure_embedded_model(Path(tmp))
            print(f"cold provision (GGUF → safetensors): {time.perf_counter() - start:6.2f} s")
    start = time.perf_counter()
    path = model_store.ensure_embedded_model()
    print(f"cache check/provision of the user cache: {time.perf_counter() - start:6.2f} s  ({path})")

    records = not args.no_token_records
    planner = LocalPlanner(device=args.device, token_records=records)
    start = time.perf_counter()
    planner.load()
    print(f"warm load (safetensors, incl. imports):  {time.perf_counter() - start:6.2f} s  {planner.release}")
    print(f"intra-op threads: {planner.threads} ({ENV_THREADS}={os.environ.get(ENV_THREADS) or 'unset'}; "
          f"{available_cores()} cores given; load average {os.getloadavg()[0]:.1f})")
    print(f"token records: {'kept' if records else 'off'}")
    uncached = LocalPlanner(device=args.device, reuse_prefix_cache=False, token_records=records).load()

    for label, specs, history in (("short", tools(2), 0), ("long", tools(8), 4)):
        messages = chat(history)
        n_prompt = len(planner.tokenizer(planner.render(messages, specs)).input_ids)
        cold_s, out = timed(lambda: uncached.plan(messages, specs, sampling=sampling), args.repeat)
        planner.plan(messages, specs, sampling=sampling)
        same_s, _ = timed(lambda: planner.plan(messages, specs, sampling=sampling), args.repeat)

        def next_turn() -> object:
            planner.plan(messages, specs, sampling=sampling)  # leave the cache at this turn's prompt
            grown = [*messages, Message(role=Role.assistant, content=out.text), Message(role=Role.tool, content='{"status": "ok"}')]
            start = time.perf_counter()
            planner.plan(grown, specs, sampling=sampling)
            return time.perf_counter() - start

        next_s = statistics.median(next_turn() for _ in range(args.repeat))
        new = out.usage.completion_tokens
        per_pass = out.timings["generate_s"] / max(1, uncached.last_forward_passes - 1) * 1000
        print(
            f"{label:5} constrained prompt {n_prompt:5d} tok, {new:2d} out ({new - len(planner.tokenizer(TOOL_CALL_PREFILL).input_ids)} generated): no prefix cache {cold_s:5.2f} s "
            f"(prefill {out.timings['prefill_s']:.2f} s, {per_pass:.0f} ms/decode pass) | same prompt cached {same_s:5.2f} s "
            f"({cold_s / same_s:.1f}x) | next turn cached {next_s:5.2f} s ({cold_s / next_s:.1f}x)"
        )

    compare_constraint(planner, tools(8), chat(4), sampling, args.repeat)
    compare_plain_generate(planner, tools(8), chat(4), sampling, args.repeat)


def compare_constraint(planner: LocalPlanner, specs: list[ToolSpec], messages: list[Message], sampling: Sampling, repeat: int) -> None:
    """One step on the same (prefix-cached) prompt, with and without the tool-call grammar."""
    rows = {}
    for constrained in (False, True):
        planner.constrained = constrained
        planner.plan(messages, specs, sampling=sampling)  # warm the prefix cache and the grammar
        step_s, out = timed(lambda: planner.plan(messages, specs, sampling=sampling), repeat)
        rows[constrained] = (step_s, out, planner.last_forward_passes, planner.last_forced_tokens)
    planner.constrained = True
    for constrained, (step_s, out, passes, forced) in rows.items():
        name = "constrained  " if constrained else "unconstrained"
        valid = "valid call" if out.tool_calls and not out.errors else "no valid call"
        print(
            f"long  {name} step {step_s:5.2f} s: {out.usage.completion_tokens:2d} out tokens, {passes:2d} forward passes, "
            f"{forced:2d} forced ({valid}): {out.text[len(TOOL_CALL_PREFILL):][:70]!r}"
        )
    (free_s, _, free_passes, _), (con_s, _, con_passes, forced) = rows[False], rows[True]
    print(
        f"constrained/unconstrained step time {con_s / free_s:.2f}x; forward passes saved by forced tokens: "
        f"{forced} of {con_passes + forced} ({forced / max(1, con_passes + forced):.0%}); "
        f"per generated token {con_s / max(1, con_passes + forced) * 1000:.0f} ms vs {free_s / max(1, free_passes) * 1000:.0f} ms"
    )


def compare_plain_generate(planner: LocalPlanner, specs: list[ToolSpec], messages: list[Message], sampling: Sampling, repeat: int) -> None:
    """The issue's yardstick: one step against plain ``model.generate`` on the same prompt with
    40 new tokens (no prefix cache, no grammar), side by side in this run."""
    import torch

    ids = planner.tokenizer(planner.render(messages, specs), return_tensors="pt").input_ids
    with torch.inference_mode():
        plain_s, _ = timed(lambda: planner.model.generate(ids, max_new_tokens=40, min_new_tokens=40, do_sample=False), repeat)
    planner.plan(messages, specs, sampling=sampling)  # the static prefix is cached once per process
    step_s, _ = timed(lambda: planner.plan(messages, specs, sampling=sampling), repeat)
    print(f"plain generate, {ids.shape[1]} prompt tokens + 40 new: {plain_s:5.2f} s; planner step {step_s:5.2f} s; "
          f"speed-up {plain_s / step_s:.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
