"""Batched decoding for the local planner: several chats through one model at once.

On a CPU a small model's decode step costs about the same for eight rows as for one (it is
bound by reading the weights, not by arithmetic), so the server decodes concurrent requests
together. The prompts' common start (system prompt and tools) is computed once, kept across
batches as a one-row KV cache, and attended by every row without being copied
(:mod:`~planner_runtime.serving.attention`). Rows are packed, not padded: every step the live
rows' pending tokens — one sampled token, or that plus the tokens its grammar forces — follow
each other in one sequence, a mask lets each token see the prefix and its own row's earlier
tokens, and explicit position ids number each row on its own. Every row has its own grammar
matcher (constrained to the offered tools, or to one named tool) and its own sampler, so a row
decodes what :class:`~planner_runtime.planners.local.LocalPlanner` alone would, up to float noise.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, Role, ToolSpec, Usage
from planner_runtime.errors import PlannerError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.chat_template import IM_END, TOOL_CALL_PREFILL, render_chat
from planner_runtime.planners.grammar import GrammarError, ToolCallGrammars
from planner_runtime.planners.local import LocalPlanner, _choose, _mask, cut, growing_cache, reserve, shared_length
from planner_runtime.planners.toolcalls import CLOSE, parse_tool_calls
from planner_runtime.serving.attention import install, several_prefixes

if TYPE_CHECKING:
    import torch

_END_TOKENS = (IM_END, "<|endoftext|>")
PREFIX_TOKENS_KEPT = 8192  # prompt starts whose KV is kept between batches (~23 KB a token in bfloat16)


@dataclass(frozen=True)
class PlanRequest:
    """One chat to decode. ``only`` limits the calls to the named tools (all tools stay in the prompt)."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    sampling: Sampling
    only: tuple[str, ...] | None = None


def prompt_start(request: PlanRequest) -> tuple[str, tuple[str, ...]]:
    """What requests from one harness with one tool list begin with: the system turn and tools."""
    system = request.messages[0].content if request.messages and request.messages[0].role is Role.system else ""
    return system, tuple(t.model_dump_json() for t in request.tools)


@dataclass(eq=False)
class _Prefix:
    """A prompt start's token ids and their one-row KV cache, kept between batches."""

    ids: list[int]
    kv: Any


@dataclass
class _Row:
    request: PlanRequest
    prompt_ids: list[int]
    prefill: str
    prefill_ids: list[int]
    matcher: Any
    generator: Any
    pending: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    position: int = 0
    done: bool = False


class BatchDecoder:
    """Decodes a list of :class:`PlanRequest` together on a loaded :class:`LocalPlanner`'s model.

    Not thread-safe: one worker thread owns it (see :mod:`planner_runtime.serving.engine`).
    """

    def __init__(self, planner: LocalPlanner) -> None:
        self.planner = planner
        self._grammars: ToolCallGrammars | None = None
        self._prefixes: list[_Prefix] = []  # least recently used first
        self._shared = False  # whether rows attend to one copy of the prefix (see attention.py)
        self._several = False  # whether rows of different prefixes decode together
        self.last_reused_tokens = 0
        self.last_forward_passes = 0

    def load(self) -> BatchDecoder:
        self.planner.load()
        tokenizer = self.planner.tokenizer
        vocab = tokenizer.get_vocab()
        self._end_ids = frozenset(vocab[t] for t in _END_TOKENS if t in vocab) | (
            {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        )
        forward = inspect.signature(self.planner.model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward else "past_key_values"
        self._grammars = ToolCallGrammars(tokenizer)
        self._shared = install(self.planner.model)
        self._several = self._shared and several_prefixes(self.planner.model)
        return self

    def decode(self, requests: Sequence[PlanRequest]) -> list[PlannerOutput | PlannerError]:
        """One output per request, in order; a request that cannot run gets its error instead."""
        import torch

        if self._grammars is None:
            self.load()
        results: list[PlannerOutput | PlannerError | None] = [None] * len(requests)
        rows: list[tuple[int, _Row]] = []
        for i, request in enumerate(requests):
            try:
                rows.append((i, self._row(request)))
            except PlannerError as exc:
                results[i] = exc
        groups: dict[tuple[str, tuple[str, ...]], list[tuple[int, _Row]]] = {}
        for i, row in rows:
            groups.setdefault(prompt_start(row.request), []).append((i, row))
        # rows offered different tools share little of their prompts: on the fused CPU path each
        # attends its own kept prefix within one batch; elsewhere each prefix's rows run in turn
        runs = [list(groups.values())] if self._several or len(groups) == 1 else [[g] for g in groups.values()]
        for run in runs:
            started = time.perf_counter()
            with torch.inference_mode():
                self._run([[row for _, row in group] for group in run])
            elapsed = time.perf_counter() - started
            size = sum(len(group) for group in run)
            for group in run:
                for i, row in group:
                    results[i] = self._output(row, elapsed, size)
        return results  # type: ignore[return-value]

    def _row(self, request: PlanRequest) -> _Row:
        import torch

        tokenizer, model = self.planner.tokenizer, self.planner.model
        tools = request.tools
        prefill = TOOL_CALL_PREFILL if tools and self.planner.prefill_tool_call else ""
        prompt_ids = tokenizer(render_chat(request.messages, tools), add_special_tokens=False).input_ids
        prefill_ids = tokenizer(prefill, add_special_tokens=False).input_ids if prefill else []
        limit = getattr(model.config, "max_position_embeddings", None)
        total = len(prompt_ids) + len(prefill_ids)
        if limit is not None and total + request.sampling.max_new_tokens > limit:
            raise PlannerError(
                f"prompt of {total} tokens plus {request.sampling.max_new_tokens} new ones exceeds the model's context of {limit}"
            )
        matcher = None
        allowed = [t for t in tools if request.only is None or t.name in request.only]
        if allowed and self.planner.constrained:
            try:
                cap = self.planner.string_cap(request.sampling.max_new_tokens)  # the same cap as a single step
                matcher = self._grammars.matcher(allowed, cap)  # type: ignore[union-attr]
            except GrammarError:
                matcher = None
            if matcher is not None and prefill_ids and not matcher.consume_tokens(prefill_ids):
                matcher = None
        generator = None
        if request.sampling.temperature > 0:
            generator = torch.Generator(device=model.device).manual_seed(request.sampling.seed)
        return _Row(request, prompt_ids, prefill, prefill_ids, matcher, generator, pending=prompt_ids + prefill_ids)

    def _prefixes_for(self, groups: list[list[_Row]]) -> list[_Prefix]:
        """A one-row KV cache of each group's common start, reusing (and cutting back or
        extending) the kept prompt start that shares most with it; leaves each row's rest pending."""
        model = self.planner.model
        claimed: list[_Prefix] = []
        self.last_reused_tokens = 0
        for rows in groups:
            first = rows[0].pending
            common = min(len(r.pending) for r in rows) - 1  # every row keeps a token to give logits
            for r in rows[1:]:
                common = min(common, shared_length(first, r.pending[:common]))
            prefix = first[:common]
            best, reused = None, 0
            for kept in self._prefixes:
                n = shared_length(kept.ids, prefix)
                if n > reused:
                    best, reused = kept, n
            if best is not None and not any(best is c for c in claimed):
                entry = best
                cut(entry.kv, reused)
                reserve(entry.kv, len(prefix))
            else:  # none to reuse, or another group of this batch attends it: copy the shared part
                entry = _Prefix([], growing_cache(model.config))
                reserve(entry.kv, len(prefix))
                if best is not None:
                    _copy_into(entry.kv, best.kv, reused)
            step = max(1, self.planner.prefill_chunk)
            for start in range(reused, len(prefix), step):  # in chunks: activations stay one chunk big
                self._forward(torch_tensor([prefix[start : start + step]]), entry.kv, None, None)
            entry.ids = prefix
            self._prefixes = [p for p in self._prefixes if p is not entry] + [entry]
            claimed.append(entry)
            self.last_reused_tokens += reused
            for r in rows:
                r.pending = r.pending[common:]
                r.position = common
        kept = sum(len(p.ids) for p in self._prefixes)
        for old in list(self._prefixes):  # the least recently used go first, never one in use
            if kept <= PREFIX_TOKENS_KEPT:
                break
            if not any(old is c for c in claimed):
                self._prefixes.remove(old)
                kept -= len(old.ids)
        return claimed

    def _run(self, groups: list[list[_Row]]) -> None:
        """Decode the rows of ``groups`` (rows sharing a prompt start) together to the end.
        Several groups only on the fused CPU path (see :meth:`decode`)."""
        import torch

        from planner_runtime.serving.attention import SharedPrefix, SharedPrefixes

        entries = self._prefixes_for(groups)
        rows = [r for group in groups for r in group]
        group_of = [g for g, group in enumerate(groups) for _ in group]
        common = len(entries[0].ids)
        cache = growing_cache(self.planner.model.config)
        reserve(cache, sum(len(r.pending) + r.request.sampling.max_new_tokens for r in rows) + (0 if self._shared else common))
        prefixes = tuple(SharedPrefix.of(e.kv) for e in entries)  # one copy each, attended by its rows
        if self._shared:
            owner = torch.empty(0, dtype=torch.long)
        else:  # a model outside the attention registry (one group): the prefix leads the packed sequence
            _copy_into(cache, entries[0].kv, common)
            owner = torch.full((common,), -1, dtype=torch.long)
        forwards = 0
        while True:
            for r in rows:
                self._take_forced(r)
            live = [(b, r) for b, r in enumerate(rows) if not r.done]
            if not live:
                break
            # Packed, not padded: the live rows' pending tokens follow each other in one sequence;
            # the mask lets a token see the prefix and its own row's earlier tokens only.
            ids: list[int] = []
            positions: list[int] = []
            mine: list[int] = []
            last: list[int] = []
            for b, r in live:
                n = len(r.pending)
                ids += r.pending
                positions += range(r.position, r.position + n)
                mine += [b] * n
                r.position += n
                last.append(len(ids) - 1)
            # A long step (the rows' prompts after the shared prefix) runs in chunks, so the mask
            # and attention scores stay a chunk's width instead of growing with every row's prompt.
            step = max(1, self.planner.prefill_chunk)
            wanted: list["torch.Tensor"] = []
            for start, end, window in self._chunks(mine, owner, step, self._shared):
                keep = [k - start for k in last if start <= k < end]
                past = owner.numel()
                query_owner = torch.tensor(mine[start:end], dtype=torch.long)
                owner = torch.cat([owner, query_owner])
                causal = torch.arange(past + end - start)[None, :] <= (past + torch.arange(end - start))[:, None]
                visible = (owner[None, :] == query_owner[:, None]) | (owner[None, :] < 0)
                mask = (visible & causal)[None, None]
                attended: Any = None
                if len(prefixes) > 1:
                    attended = SharedPrefixes(prefixes, torch.tensor([group_of[b] for b in mine[start:end]]), window)
                elif self._shared:
                    attended = replace(prefixes[0], window=window)
                logits = self._forward(
                    torch.tensor([ids[start:end]]), cache, mask, torch.tensor([positions[start:end]]), attended,
                    torch.tensor(keep or [end - start - 1]),
                )
                if keep:
                    wanted.append(logits[0])
            forwards += 1
            chosen = torch.cat(wanted)
            for k, (_, r) in enumerate(live):
                self._sample(r, chosen[k])
        self.last_forward_passes = forwards

    @staticmethod
    def _chunks(mine: list[int], owner: "torch.Tensor", step: int, windowed: bool) -> list[tuple[int, int, int]]:
        """``(start, end, window)`` pieces of a step's packed tokens. A short step is one piece;
        a long one (the rows' prompts) goes row by row in pieces of ``step`` tokens, each seeing
        the cache from its row's first position on (``window``) rather than every row's keys."""
        if len(mine) <= step or not windowed:
            return [(start, min(len(mine), start + step), 0) for start in range(0, len(mine), step)]
        pieces: list[tuple[int, int, int]] = []
        past = owner.numel()
        begin = 0
        while begin < len(mine):
            row, end = mine[begin], begin
            while end < len(mine) and mine[end] == row:
                end += 1
            earlier = (owner == row).nonzero()
            window = int(earlier[0]) if earlier.numel() else past + begin
            pieces += [(s, min(end, s + step), window) for s in range(begin, end, step)]
            begin = end
        return pieces

    def _take_forced(self, r: _Row) -> None:
        if r.done or r.matcher is None:
            return
        room = r.request.sampling.max_new_tokens - len(r.generated)
        forced = r.matcher.compute_ff_tokens()[:room]
        if forced:
            r.matcher.consume_tokens(forced)
            r.generated += forced
            r.pending += forced
            if r.matcher.is_stopped() or len(r.generated) >= r.request.sampling.max_new_tokens:
                r.done = True

    def _sample(self, r: _Row, logits: "torch.Tensor") -> None:
        if r.matcher is not None:
            _mask(logits, r.matcher)
        token = _choose(logits, r.request.sampling, r.generator)
        r.generated.append(token)
        r.pending = [token]
        if r.matcher is not None:
            if not r.matcher.consume_token(token):
                r.matcher = None
            elif r.matcher.is_stopped():
                r.done = True
        elif token in self._end_ids or CLOSE in self.planner.tokenizer.decode(r.generated[-8:]):
            r.done = True
        if len(r.generated) >= r.request.sampling.max_new_tokens:
            r.done = True

    def _forward(
        self, ids: "torch.Tensor", cache: Any, mask: "torch.Tensor | None", positions: "torch.Tensor | None",
        prefix: Any = None, keep: "torch.Tensor | None" = None,
    ) -> "torch.Tensor":
        """Logits at the ``keep`` positions (``[1, len(keep), vocab]``), or at the last one."""
        model = self.planner.model
        extra: dict[str, Any] = {}
        if mask is not None:
            extra = {"attention_mask": mask.to(model.device), "position_ids": positions.to(model.device)}  # type: ignore[union-attr]
        if prefix is not None:
            extra["shared_prefix"] = prefix
        to_keep = keep.to(model.device) if keep is not None else 1
        out = model(input_ids=ids.to(model.device), **{self._cache_kwarg: cache}, **extra, use_cache=True, logits_to_keep=to_keep)
        return out.logits

    def _output(self, r: _Row, elapsed: float, batch: int) -> PlannerOutput:
        text = r.prefill + self.planner.tokenizer.decode(r.generated, skip_special_tokens=False)
        if CLOSE in text:
            text = text[: text.index(CLOSE) + len(CLOSE)]
        for end in _END_TOKENS:
            text = text.split(end, 1)[0]
        calls, errors = parse_tool_calls(text)
        usage = Usage(prompt_tokens=len(r.prompt_ids), completion_tokens=len(r.prefill_ids) + len(r.generated))
        timings = {"batch_s": elapsed, "batch_size": float(batch)}
        return PlannerOutput(text=text, tool_calls=tuple(calls), errors=tuple(errors), usage=usage, timings=timings)


def _copy_into(cache: Any, kv: Any, tokens: int) -> None:
    """Append the first ``tokens`` positions of ``kv`` to ``cache`` (every layer copies them)."""
    for index, layer in enumerate(kv.layers):
        if getattr(layer, "keys", None) is not None and layer.keys.numel():
            cache.update(layer.keys[..., :tokens, :], layer.values[..., :tokens, :], index)


def torch_tensor(rows: list[list[int]]) -> "torch.Tensor":
    import torch

    return torch.tensor(rows, dtype=torch.long)
