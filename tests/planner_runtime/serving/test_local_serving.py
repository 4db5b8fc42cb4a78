"""The embedded model behind `serve`: batched decoding answers what the planner alone answers."""

from __future__ import annotations

import threading

import pytest

from planner_runtime.contract import Message, Role, ToolSpec
from planner_runtime.planners import Sampling
from planner_runtime.planners.local.batch import BatchDecoder, PlanRequest

pytestmark = pytest.mark.slow

TOOLS = (
    ToolSpec(name="set_alarm", description="Set an alarm on the phone's clock.", parameters={
        "type": "object", "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}}, "required": ["hour", "minute"],
        "additionalProperties": False}),
    ToolSpec(name="open_app", description="Open an app by name.", parameters={
        "type": "object", "properties": {"app": {"type": "string"}}, "required": ["app"], "additionalProperties": False}),
)
GOALS = ["Wake me up at 7:30 tomorrow.", "Open the Clock app.", "Set an alarm for 6:15 please."]


def chat(goal: str) -> tuple[Message, ...]:
    return (Message(role=Role.system, content="You operate an Android phone for the user."), Message(role=Role.user, content=goal))


@pytest.fixture(scope="module")
def local(model_cache):
    from planner_runtime.planners.local.planner import LocalPlanner

    # float32: these tests hold batching to what one chat decodes alone, bit for bit in practice.
    # In bfloat16 even one chat's answer can change with how its prompt was split into forward
    # passes (a cached prefix, a prefill chunk), so near-tied tokens may flip either way.
    return LocalPlanner(cache_dir=model_cache, max_new_tokens=32, dtype="float32").load()


def test_a_batch_decodes_what_each_chat_decodes_alone(local):
    sampling = Sampling(max_new_tokens=32)
    alone = [local.plan(list(chat(g)), list(TOOLS), sampling=sampling).text for g in GOALS]
    decoder = BatchDecoder(local).load()
    together = decoder.decode([PlanRequest(chat(g), TOOLS, sampling) for g in GOALS])
    assert [o.text for o in together] == alone
    again = decoder.decode([PlanRequest(chat(g), TOOLS, sampling) for g in GOALS])
    assert [o.text for o in again] == alone and decoder.last_reused_tokens > 100  # the shared prefix was kept
    for goal, expected in zip(GOALS[:2], alone):  # single rows: their prompts are all kept now
        assert decoder.decode([PlanRequest(chat(goal), TOOLS, sampling)])[0].text == expected


def test_a_named_tool_constrains_the_call_to_it(local):
    decoder = BatchDecoder(local).load()
    outs = decoder.decode([PlanRequest(chat("Open the Clock app."), TOOLS, Sampling(max_new_tokens=32), only=("set_alarm",))])
    # The grammar forces the name; the tiny model may still ramble inside the arguments.
    assert outs[0].text.startswith('<tool_call>\n{"name": "set_alarm", "arguments": {')


def test_our_client_and_the_official_one_against_serve_with_the_model(local):
    import openai

    from planner_runtime.planners.openai.client import OpenAIPlanner
    from planner_runtime.serving.server import PlannerServer

    with PlannerServer(local, model_name="smol") as server:
        ours = OpenAIPlanner(server.base_url, "smol", timeout=120)
        out = ours.plan(list(chat(GOALS[0])), list(TOOLS), sampling=Sampling(max_new_tokens=32))
        assert len(out.tool_calls) == 1 and out.tool_calls[0].name in {"set_alarm", "open_app"}
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}} for t in TOOLS]
        replies = []

        def ask(goal: str) -> None:
            replies.append(client.chat.completions.create(
                model="smol", messages=[{"role": "user", "content": goal}], tools=tools, max_tokens=32,
                tool_choice={"type": "function", "function": {"name": "set_alarm"}}))

        threads = [threading.Thread(target=ask, args=(g,)) for g in GOALS]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert [r.choices[0].message.tool_calls[0].function.name for r in replies] == ["set_alarm"] * 3
        assert max(server.engine.batches) > 1  # concurrent requests shared a batch


def test_rows_prefilled_in_small_pieces_decode_what_each_chat_decodes_alone(local):
    sampling = Sampling(max_new_tokens=32)
    alone = [local.plan(list(chat(g)), list(TOOLS), sampling=sampling).text for g in GOALS]
    local.prefill_chunk = 3  # every row's prompt after the shared prefix spans several pieces
    try:
        together = BatchDecoder(local).load().decode([PlanRequest(chat(g), TOOLS, sampling) for g in GOALS])
    finally:
        local.prefill_chunk = 512
    assert [o.text for o in together] == alone


def test_requests_with_different_tools_decode_together_as_each_alone(local):
    from planner_runtime.serving.engine import Engine

    sampling = Sampling(max_new_tokens=32)
    requests = [PlanRequest(chat(GOALS[0]), TOOLS, sampling), PlanRequest(chat(GOALS[1]), TOOLS[1:], sampling),
                PlanRequest(chat(GOALS[2]), TOOLS, sampling)]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=sampling).text for r in requests]
    engine = Engine(local, gather_s=1.0).start()
    try:
        futures = [engine.submit(r) for r in requests]
        texts = [f.result(timeout=300).text for f in futures]
    finally:
        engine.stop()
    assert engine.batches == [3] and engine.widest == 3  # one batch: each row attends its own prompt's nodes
    assert texts == alone
    decoder = engine._decoder
    # the prompts' common start is kept once, and each prompt's own part after it
    assert len(decoder.tree.root.children) == 1
    from planner_runtime.planners.local.prefix_cache import shared_length

    rows = [decoder._row(r) for r in requests]
    kept = [r.turn.encoded.input_ids for r in rows]  # each prompt bar its last token goes into the tree
    common = min(shared_length(kept[0], k) for k in kept[1:])
    assert decoder.tree.tokens <= sum(len(k) - 1 for k in kept) - 2 * common  # the common start stored once, not three times
    again = decoder.decode(requests)
    assert [o.text for o in again] == alone and decoder.last_reused_tokens == sum(len(k) - 1 for k in kept)  # all kept


def test_rows_of_different_prompt_starts_prefilled_in_pieces_decode_as_each_alone(local):
    sampling = Sampling(max_new_tokens=32)
    requests = [PlanRequest(chat(GOALS[0]), TOOLS[1:], sampling), PlanRequest(chat(GOALS[1]), TOOLS, sampling),
                PlanRequest(chat(GOALS[2]), TOOLS[1:], sampling), PlanRequest(chat(GOALS[0]), TOOLS, sampling)]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=sampling).text for r in requests]
    local.prefill_chunk = 3
    try:
        together = BatchDecoder(local).load().decode(requests)
    finally:
        local.prefill_chunk = 512
    assert [o.text for o in together] == alone


def test_without_the_fused_kernel_mixed_rows_decode_as_each_alone(local, monkeypatch):
    """The path used off the CPU (CUDA): every part of the attention by plain matrix products."""
    from planner_runtime.planners.local import attention

    sampling = Sampling(max_new_tokens=32)
    requests = [PlanRequest(chat(GOALS[0]), TOOLS, sampling), PlanRequest(chat(GOALS[1]), TOOLS[1:], sampling),
                PlanRequest(chat(GOALS[2]), TOOLS, sampling)]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=sampling).text for r in requests]
    decoder = BatchDecoder(local).load()
    monkeypatch.setattr(attention, "_FLASH_CPU", None)
    outs = decoder.decode(requests)
    assert [o.text for o in outs] == alone
    assert [o.timings["batch_rows"] for o in outs] == [3, 3, 3]


def test_a_request_joins_a_running_batch_and_each_leaves_when_done(local, monkeypatch):
    from planner_runtime.planners.local import batch

    monkeypatch.setattr(batch, "_COMPACT_AT", 1)  # drop ended rows' positions from the packed cache at once
    requests = [PlanRequest(chat(GOALS[0]), TOOLS, Sampling(max_new_tokens=32)),
                PlanRequest(chat(GOALS[1]), TOOLS[1:], Sampling(max_new_tokens=6)),
                PlanRequest(chat(GOALS[2]), TOOLS, Sampling(max_new_tokens=32))]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=r.sampling).text for r in requests]
    decoder = BatchDecoder(local).load()
    first = decoder.admit(requests[0])
    ended: dict[int, tuple[int, str]] = {}
    steps = 0

    def step() -> None:
        nonlocal steps
        steps += 1
        for row, out in decoder.step():
            ended[row.uid] = (steps, out.text)

    step()
    step()
    second = decoder.admit(requests[1])  # joins while the first is decoding
    assert decoder.live == 2
    step()
    third = decoder.admit(requests[2])
    while decoder.live:
        step()
    assert [ended[r.uid][1] for r in (first, second, third)] == alone
    assert ended[second.uid][0] < ended[first.uid][0]  # the short answer left before the long one ended
    assert decoder._cache.get_seq_length() == 0  # the packed cache is dropped once idle


def test_a_model_that_cannot_batch_is_served_one_request_at_a_time(local, monkeypatch):
    from planner_runtime.serving.engine import Engine

    monkeypatch.setattr(local, "batchable", False)  # as for attention outside transformers' registry
    sampling = Sampling(max_new_tokens=16)
    request = PlanRequest(chat(GOALS[1]), TOOLS, sampling)
    alone = local.plan(list(request.messages), list(request.tools), sampling=sampling).text
    engine = Engine(local).start()
    try:
        assert engine._decoder is None
        assert engine.submit(request).result(timeout=300).text == alone
    finally:
        engine.stop()


def test_the_engine_lets_a_request_join_while_another_decodes(local):
    import time

    from planner_runtime.serving.engine import Engine

    requests = [PlanRequest(chat(GOALS[0]), TOOLS, Sampling(max_new_tokens=32)), PlanRequest(chat(GOALS[1]), TOOLS[1:], Sampling(max_new_tokens=32))]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=r.sampling).text for r in requests]
    engine = Engine(local, gather_s=0.0).start()
    try:
        first = engine.submit(requests[0])
        deadline = time.monotonic() + 120
        while not engine._decoder.live and time.monotonic() < deadline:  # the first is decoding
            time.sleep(0.001)
        second = engine.submit(requests[1])
        texts = [first.result(timeout=300).text, second.result(timeout=300).text]
    finally:
        engine.stop()
    assert texts == alone
    assert engine.batches == [2] and engine.widest == 2  # one busy spell: the second joined the first's batch


def test_a_failed_step_fails_the_running_requests_and_the_engine_goes_on(local, monkeypatch):
    from planner_runtime.serving.engine import Engine

    request = PlanRequest(chat(GOALS[1]), TOOLS, Sampling(max_new_tokens=16))
    alone = local.plan(list(request.messages), list(request.tools), sampling=request.sampling).text
    engine = Engine(local, gather_s=0.0).start()
    try:
        decoder = engine._decoder
        real = decoder._forward_rows
        calls = []

        def broken(live):
            calls.append(len(live))
            if len(calls) == 1:
                raise RuntimeError("the model failed")
            return real(live)

        monkeypatch.setattr(decoder, "_forward_rows", broken)
        with pytest.raises(RuntimeError, match="the model failed"):
            engine.submit(request).result(timeout=300)
        assert decoder.live == 0 and all(n.users == 0 for n in decoder.tree.nodes())  # nothing left pinned
        assert engine.submit(request).result(timeout=300).text == alone
    finally:
        engine.stop()


def test_the_kept_prompt_kv_stays_within_its_budget_once_rows_end(local):
    from planner_runtime.planners.local.prefix_cache import shared_length

    sampling = Sampling(max_new_tokens=16)
    requests = [PlanRequest(chat(g), TOOLS, sampling) for g in GOALS]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=sampling).text for r in requests]
    probe = BatchDecoder(local).load()
    prompts = [probe._row(r).turn.encoded.prompt_ids for r in requests]
    common = min(shared_length(prompts[0], p) for p in prompts[1:])  # the start all three share
    decoder = BatchDecoder(local, kept_tokens=common + 5).load()
    outs = decoder.decode(requests)
    assert [o.text for o in outs] == alone  # every prompt was kept while its row decoded
    # then the free leaves went, least recently used first, down to the budget: the shared start stays
    assert common <= decoder.tree.tokens <= common + 5 and all(n.users == 0 for n in decoder.tree.nodes())
    assert [o.text for o in decoder.decode(requests[:1])] == alone[:1] and decoder.last_reused_tokens >= common


def test_failures_around_a_batch_leave_nothing_pinned_and_lose_no_request(local, monkeypatch):
    sampling = Sampling(max_new_tokens=16)
    requests = [PlanRequest(chat(g), TOOLS, sampling) for g in GOALS[:2]]
    alone = [local.plan(list(r.messages), list(r.tools), sampling=sampling).text for r in requests]
    decoder = BatchDecoder(local).load()

    def broken(nodes):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(decoder, "_build", broken)
    with pytest.raises(RuntimeError, match="out of memory"):  # computing the prompts failed: none admitted
        decoder.admit_many(requests)
    assert decoder.live == 0 and decoder.tree.tokens == 0 and not decoder.tree.nodes()
    monkeypatch.undo()

    real = decoder._output

    def output(row):
        if row.uid == first.uid:
            raise ValueError("bad bytes")
        return real(row)

    monkeypatch.setattr(decoder, "_output", output)
    first, second = decoder.admit_many(requests)
    ended = {}
    while decoder.live:
        for row, out in decoder.step():
            ended[row.uid] = out
    assert isinstance(ended[first.uid], ValueError) and ended[second.uid].text == alone[1]  # one row's failure is its own
    assert all(n.users == 0 for n in decoder.tree.nodes())


def test_a_request_for_no_new_tokens_generates_none(local):
    out = BatchDecoder(local).load().decode([PlanRequest(chat(GOALS[0]), (), Sampling(max_new_tokens=0))])[0]
    assert out.usage.completion_tokens == 0 and out.text == ""


LIST_TOOL = ToolSpec(name="delegate", description="Hand a part of the goal to a sub-agent with the tools it may use.", parameters={
    "type": "object", "additionalProperties": False, "required": ["goal", "tools"],
    "properties": {"goal": {"type": "string"}, "tools": {"type": "array", "items": {"type": "string"}}}})


def test_a_batched_call_always_closes_within_its_token_budget(local, monkeypatch):
    # A model that keeps values open (any allowed token, mostly none with a quote, bracket or
    # brace) under small budgets: every served call still closes, parses and fits the schema.
    import random

    import torch

    from planner_runtime.planners.local import decoding

    texts = [local._tokenizer.decode([i]) for i in range(len(local._tokenizer))]
    enders = torch.tensor([any(c in t for c in '"]}') for t in texts])
    rng = random.Random(7)

    def keep_open(logits, sampling, generator):
        allowed = torch.isfinite(logits[: len(enders)])
        pool = (allowed & ~enders).nonzero().flatten()
        if not pool.numel() or rng.random() > 0.9:
            pool = allowed.nonzero().flatten()
        return int(pool[rng.randrange(pool.numel())])

    monkeypatch.setattr(decoding, "choose", keep_open)
    decoder = BatchDecoder(local).load()
    for budget in (32, 40, 64):  # the shortest delegate call takes 29 tokens past the prefill
        requests = [PlanRequest(chat(f"Ask a helper to check every app ({n})."), (LIST_TOOL,), Sampling(max_new_tokens=budget)) for n in range(4)]
        for out in decoder.decode(requests):
            assert not out.errors, out.text
            assert [c.name for c in out.tool_calls] == ["delegate"] and isinstance(out.tool_calls[0].arguments["tools"], list)
