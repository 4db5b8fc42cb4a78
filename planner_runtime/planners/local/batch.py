"""Continuous batched decoding for the local planner: many chats through one model at once.

On a CPU a small model's decode step costs about the same for eight rows as for one (it is
bound by reading the weights, not by arithmetic), so the server decodes concurrent requests
together. Requests join the running batch at any step boundary (:meth:`BatchDecoder.admit`) and
leave it the step they finish (:meth:`BatchDecoder.step` returns them), so a request never waits
for a whole batch to end.

Prompts live in a radix tree of KV (:mod:`~planner_runtime.planners.local.prefix_tree`): a joining row
computes KV only for the part of its prompt no kept prompt shares, and every row attends its
chain of tree nodes without copying it (:mod:`~planner_runtime.planners.local.attention`). Rows are
packed, not padded: every step the live rows' pending tokens — one sampled token, or that plus
the tokens its grammar forces — follow each other in one sequence, a mask lets each token see its
own row's earlier tokens, and explicit position ids number each row on its own. Every row has its
own grammar matcher (constrained to the offered tools, or to one named tool) and its own sampler,
so a row decodes what :class:`~planner_runtime.planners.local.planner.LocalPlanner` alone would, up to
float noise (given schemas that name every argument they allow: the decoder closes open object
schemas, see :mod:`~planner_runtime.serving.schemas`). A row whose caller left is dropped with
:meth:`BatchDecoder.cancel`; an answer that its token budget cut off says so (``truncated``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, ToolSpec, Usage
from planner_runtime.errors import PlannerError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.local.planner import LocalPlanner, _choose, _mask, growing_cache, reserve
from planner_runtime.planners.local.grammar import reaches_cap
from planner_runtime.planners.toolcalls import parse_tool_calls
from planner_runtime.planners.local.attention import Prefixes, Segment
from planner_runtime.planners.local.prefix_tree import Node, PrefixTree, attended, pieces
from planner_runtime.serving.schemas import closed_tools

if TYPE_CHECKING:
    import torch

PREFIX_TOKENS_KEPT = 8192  # prompt KV kept once no row needs it (~23 KB a token in bfloat16)
_COMPACT_AT = 256  # finished rows' own positions dropped from the packed cache past this many


@dataclass(frozen=True)
class PlanRequest:
    """One chat to decode. ``only`` limits the calls to the named tools (all tools stay in the prompt)."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    sampling: Sampling
    only: tuple[str, ...] | None = None


class Decoded(PlannerOutput):
    """A row's answer; ``truncated`` when its token budget ran out before the answer ended, or
    forced the call's closing (``cut``): the API's ``finish_reason: length``."""

    truncated: bool = False


@dataclass(eq=False)
class Row:
    """A request being decoded: its prompt's tree node, its own pending and generated tokens."""

    request: PlanRequest
    prompt_ids: list[int]
    prefill: str
    prefill_ids: list[int]
    matcher: Any
    generator: Any
    uid: int = 0
    node: Node | None = None
    reused: int = 0  # prompt tokens found kept in the tree
    pending: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    position: int = 0
    done: bool = False
    admitted: float = 0.0
    prefill_s: float = 0.0
    widest: int = 0  # the most rows decoded together with this one
    cut: bool = False  # the budget forced the call's closing


class BatchDecoder:
    """Decodes :class:`PlanRequest` rows together on a loaded :class:`LocalPlanner`'s model.

    Not thread-safe: one worker thread owns it (see :mod:`planner_runtime.serving.engine`).
    """

    def __init__(self, planner: LocalPlanner, *, kept_tokens: int = PREFIX_TOKENS_KEPT) -> None:
        self.planner = planner
        self.tree = PrefixTree(kept_tokens)
        self._loaded = False
        self._rows: list[Row] = []
        self._uids = count()
        self._cache: Any = None  # the rows' own tokens, packed; ``_owner`` names each position's row
        self._owner: Any = None
        self._joined: dict = {}  # the short nodes of the last step, concatenated
        self.last_reused_tokens = 0  # prompt tokens the last decode() found kept

    def load(self) -> BatchDecoder:
        self.planner.load()
        if not self.planner.batchable:
            raise PlannerError("this model's attention is outside transformers' registry; it cannot decode in batches")
        self._loaded = True
        self._clear()
        # ended rows' positions can be dropped from the packed cache only if every layer can
        self._compactable = all(getattr(layer, "keep_positions", None) is not None for layer in self._cache.layers)
        return self

    @property
    def live(self) -> int:
        """Rows still decoding."""
        return len(self._rows)

    def decode(self, requests: Sequence[PlanRequest]) -> list[PlannerOutput | PlannerError]:
        """Admit ``requests`` and decode until all end: one output per request, in order; a
        request that cannot run gets its error instead."""
        if not self._loaded:
            self.load()
        admitted = self.admit_many(requests)
        self.last_reused_tokens = sum(r.reused for r in admitted if isinstance(r, Row))
        results: list[Any] = list(admitted)
        index = {r.uid: i for i, r in enumerate(admitted) if isinstance(r, Row)}
        try:
            while self._rows:
                for row, out in self.step():
                    results[index[row.uid]] = out
        except BaseException:
            self.abort()
            raise
        for out in results:
            if isinstance(out, BaseException) and not isinstance(out, PlannerError):
                raise out
        return results

    def admit(self, request: PlanRequest) -> Row:
        """:meth:`admit_many` for one request; raises its :class:`PlannerError`."""
        row = self.admit_many([request])[0]
        if isinstance(row, PlannerError):
            raise row
        return row

    def admit_many(self, requests: Sequence[PlanRequest]) -> list[Row | PlannerError]:
        """Start decoding ``requests`` with the running rows. Their prompts go into the tree and
        the parts not kept are computed together; each decodes from the next :meth:`step`.
        A request that cannot run gets its :class:`PlannerError`; any other failure admits
        none of them and leaves the decoder as it was."""
        import torch

        admitted: list[Row | PlannerError] = []
        try:
            for request in requests:
                try:
                    row = self._row(request)
                except PlannerError as exc:
                    admitted.append(exc)
                    continue
                ids = row.prompt_ids + row.prefill_ids
                row.node, row.reused = self.tree.insert(ids[:-1])  # the last token gives the first logits
                row.pending, row.position = ids[-1:], len(ids) - 1
                admitted.append(row)
            rows = [r for r in admitted if isinstance(r, Row)]
            started = time.perf_counter()
            with torch.inference_mode():
                self._build(self.tree.unbuilt())
            for row in rows:
                self._take_forced(row)
        except BaseException:
            self.tree.drop_unbuilt()
            for r in admitted:
                if isinstance(r, Row) and r.node is not None:
                    self.tree.release(r.node)
            raise
        now = time.perf_counter()
        for row in rows:
            row.uid, row.admitted, row.prefill_s = next(self._uids), now, now - started
            self._rows.append(row)
        return admitted

    def step(self) -> list[tuple[Row, PlannerOutput | Exception]]:
        """One forward pass over every live row; returns the rows that ended, with their
        answers (or what went wrong making one). A failed forward pass raises: :meth:`abort`."""
        import torch

        live = [r for r in self._rows if not r.done]
        if live:
            with torch.inference_mode():
                self._forward_rows(live)
        ended = [r for r in self._rows if r.done]
        if not ended:
            return []
        outputs: list[tuple[Row, PlannerOutput | Exception]] = []
        for r in ended:
            self.tree.release(r.node)  # type: ignore[arg-type]
            try:
                outputs.append((r, self._output(r)))
            except Exception as exc:  # noqa: BLE001 - that row's caller hears of it, the others go on
                outputs.append((r, exc))
        self._rows = [r for r in self._rows if not r.done]
        self._joined.clear()  # the set of attended short nodes changed
        if not self._rows:
            self._clear()
        elif self._compactable:
            with torch.inference_mode():
                self._compact()
        return outputs

    def cancel(self, uid: int) -> bool:
        """Drop the running row ``uid`` (its caller has gone) before the next :meth:`step`;
        whether it was running."""
        import torch

        row = next((r for r in self._rows if r.uid == uid), None)
        if row is None:
            return False
        self.tree.release(row.node)  # type: ignore[arg-type]
        self._rows.remove(row)
        self._joined.clear()
        if not self._rows:
            self._clear()
        elif self._compactable:
            with torch.inference_mode():
                self._compact()
        return True

    def abort(self) -> list[Row]:
        """Drop every running row (after a failed step); returns them so callers can be told."""
        rows, self._rows = self._rows, []
        for r in rows:
            if r.node is not None:
                self.tree.release(r.node)
        self._clear()
        return rows

    def _clear(self) -> None:
        import torch

        self._cache = growing_cache(self.planner.model.config)
        self._owner = torch.empty(0, dtype=torch.long)
        self._joined.clear()

    def _row(self, request: PlanRequest) -> Row:
        """Tokenized, with its grammar and sampler, as the planner alone would run it; the grammar
        allows no argument a tool's schema does not name unless the schema says it may
        (:func:`~planner_runtime.serving.schemas.closed`)."""
        planner, budget = self.planner, request.sampling.max_new_tokens
        prompt_ids, prefill, prefill_ids = planner.encode(request.messages, request.tools, budget)
        if not prompt_ids and not prefill_ids:
            raise PlannerError("the prompt is empty")
        allowed = closed_tools(tuple(t for t in request.tools if request.only is None or t.name in request.only))
        matcher = planner.matcher(allowed, prefill_ids, budget)
        return Row(request, prompt_ids, prefill, prefill_ids, matcher, planner.generator(request.sampling))

    def _build(self, nodes: list[Node]) -> None:
        """Compute the KV of unbuilt tree nodes: in waves (a node after its parent), each wave's
        nodes packed into one sequence and run in pieces of at most ``prefill_chunk`` tokens."""
        while nodes:
            wave = [n for n in nodes if n.parent is self.tree.root or n.parent.segment is not None]  # type: ignore[union-attr]
            nodes = [n for n in nodes if n not in wave]
            self._build_wave(wave)

    def _build_wave(self, nodes: list[Node]) -> None:
        import torch

        ids: list[int] = []
        positions: list[int] = []
        owner: list[int] = []
        spans: list[tuple[int, int]] = []
        for k, node in enumerate(nodes):
            spans.append((len(ids), len(ids) + len(node.ids)))
            ids += node.ids
            positions += range(node.start, node.end)
            owner += [k] * len(node.ids)
        cache = growing_cache(self.planner.model.config)
        reserve(cache, len(ids))
        owners = torch.tensor(owner)
        chains = [n.parent.chain() for n in nodes]  # type: ignore[union-attr]
        for start, end, window in pieces(spans, max(1, self.planner.prefill_chunk)):
            query_owner = owners[start:end]
            causal = torch.arange(end)[None, :] <= torch.arange(start, end)[:, None]
            mask = ((owners[None, :end] == query_owner[:, None]) & causal)[None, None]
            seen: dict[Node, list[int]] = {}
            for k in query_owner.unique().tolist():
                at = (query_owner == k).nonzero().flatten().tolist()
                for node in chains[k]:
                    seen.setdefault(node, []).extend(at)
            prefixes = attended(seen, end - start, self.planner.model.device, window)
            self._forward(torch.tensor([ids[start:end]]), cache, mask, torch.tensor([positions[start:end]]), prefixes,
                          torch.tensor([end - start - 1]))
        whole = Segment.of(cache)
        for node, (a, b) in zip(nodes, spans):
            node.segment = whole if len(nodes) == 1 else whole.part(slice(a, b))

    def _forward_rows(self, live: list[Row]) -> None:
        import torch

        # Packed, not padded: the live rows' pending tokens follow each other in one sequence;
        # the mask lets a token see its own row's earlier tokens only (the prompt is in the tree).
        ids: list[int] = []
        positions: list[int] = []
        mine: list[int] = []
        last: list[int] = []
        seen: dict[Node, list[int]] = {}
        for r in live:
            n = len(r.pending)
            at = len(ids)
            ids += r.pending
            positions += range(r.position, r.position + n)
            mine += [r.uid] * n
            r.position += n
            last.append(len(ids) - 1)
            for node in r.node.chain():  # type: ignore[union-attr]
                seen.setdefault(node, []).extend(range(at, at + n))
            r.widest = max(r.widest, len(live))
        prefixes = attended(seen, len(ids), self.planner.model.device, joined=self._joined)
        query_owner = torch.tensor(mine, dtype=torch.long)
        past = self._owner.numel()
        self._owner = torch.cat([self._owner, query_owner])
        causal = torch.arange(past + len(ids))[None, :] <= (past + torch.arange(len(ids)))[:, None]
        mask = ((self._owner[None, :] == query_owner[:, None]) & causal)[None, None]
        logits = self._forward(torch.tensor([ids]), self._cache, mask, torch.tensor([positions]), prefixes, torch.tensor(last))
        for k, r in enumerate(live):
            self._sample(r, logits[0, k])
            self._take_forced(r)

    def _compact(self) -> None:
        """Drop the ended rows' positions from the packed cache once there are enough of them."""
        import torch

        alive = torch.tensor([r.uid for r in self._rows])
        keep = torch.isin(self._owner, alive)
        if int((~keep).sum()) < _COMPACT_AT:
            return
        at = keep.nonzero().flatten()
        for layer in self._cache.layers:
            layer.keep_positions(at)
        self._owner = self._owner[at]

    def _take_forced(self, r: Row) -> None:
        if len(r.generated) >= r.request.sampling.max_new_tokens:
            r.done = True
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

    def _sample(self, r: Row, logits: "torch.Tensor") -> None:
        if r.matcher is not None:
            _mask(logits, r.matcher)
        token = _choose(logits, r.request.sampling, r.generator)
        if r.matcher is not None:
            # the call must still close in what is left of the budget, else it closes now instead
            emitted = self.planner.admit(r.matcher, token, r.request.sampling.max_new_tokens - len(r.generated))
            if emitted is None:
                r.matcher, emitted = None, [token]
            r.cut |= emitted != [token]
            r.generated += emitted
            r.pending = emitted
            if r.matcher is not None and r.matcher.is_stopped():
                r.done = True
        else:
            r.generated.append(token)
            r.pending = [token]
            if self.planner.ended(r.generated):
                r.done = True
        if len(r.generated) >= r.request.sampling.max_new_tokens:
            r.done = True

    def _forward(
        self, ids: "torch.Tensor", cache: Any, mask: "torch.Tensor", positions: "torch.Tensor",
        prefixes: Prefixes, keep: "torch.Tensor",
    ) -> "torch.Tensor":
        """Logits at the ``keep`` positions: ``[1, len(keep), vocab]``."""
        model = self.planner.model
        out = model(
            input_ids=ids.to(model.device), **{self.planner.cache_kwarg: cache}, attention_mask=mask.to(model.device),
            position_ids=positions.to(model.device), shared_prefix=prefixes, use_cache=True, logits_to_keep=keep.to(model.device),
        )
        return out.logits

    def _output(self, r: Row) -> Decoded:
        text = self.planner.answer(r.prefill, r.generated)
        ended = r.matcher.is_stopped() if r.matcher is not None else bool(r.generated) and self.planner.ended(r.generated)
        calls, errors = parse_tool_calls(text)
        cap = self.planner.string_cap(r.request.sampling.max_new_tokens) if r.matcher is not None else None
        cut = r.cut or any(reaches_cap(call.arguments, cap) for call in calls)
        usage = Usage(prompt_tokens=len(r.prompt_ids), completion_tokens=len(r.prefill_ids) + len(r.generated))
        # prefill_s: computing the new part of the prompts admitted with this one, together
        timings = {"prefill_s": r.prefill_s, "generate_s": time.perf_counter() - r.admitted, "batch_rows": float(r.widest)}
        return Decoded(text=text, tool_calls=tuple(calls), errors=tuple(errors), usage=usage, timings=timings, cut=cut,
                       truncated=cut or (not ended and len(r.generated) >= r.request.sampling.max_new_tokens))

