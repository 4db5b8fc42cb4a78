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
schemas, see :func:`~planner_runtime.planners.local.grammar.closed`); each step of a row is a
:class:`~planner_runtime.planners.local.decoding.Turn`'s, as in the planner. A request that asks
for its token record (``PlanRequest.tokens``) gets it on ``PlannerOutput.tokens``; its row then
stays for one more step when forced tokens end its call, to score them. A row whose caller left
is dropped with :meth:`BatchDecoder.cancel`; an answer that its token budget cut off says so
(``truncated``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, ToolSpec
from planner_runtime.errors import PlannerError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.local.attention import Prefixes, Segment
from planner_runtime.planners.local.decoding import Turn
from planner_runtime.planners.local.grammar import closed_tools
from planner_runtime.planners.local.kv_cache import growing_cache, reserve
from planner_runtime.planners.local.planner import LocalPlanner
from planner_runtime.planners.local.prefix_tree import Node, PrefixTree, attended, pieces

if TYPE_CHECKING:
    import torch

PREFIX_TOKENS_KEPT = 8192  # prompt KV kept once no row needs it (~23 KB a token in bfloat16)
_COMPACT_AT = 256  # finished rows' own positions dropped from the packed cache past this many


@dataclass(frozen=True)
class PlanRequest:
    """One chat to decode. ``only`` limits the calls to the named tools (all tools stay in the
    prompt); ``tokens`` asks for the answer's token record (ids, logprobs, the sampled mask)."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    sampling: Sampling
    only: tuple[str, ...] | None = None
    tokens: bool = False


class Decoded(PlannerOutput):
    """A row's answer; ``truncated`` when its token budget ran out before the answer ended, or
    forced the call's closing (``cut``): the API's ``finish_reason: length``."""

    truncated: bool = False


@dataclass(eq=False)
class Row:
    """A request being decoded: its prompt's tree node and its turn (own pending and generated tokens)."""

    request: PlanRequest
    turn: Turn
    uid: int = 0
    node: Node | None = None
    reused: int = 0  # prompt tokens found kept in the tree
    position: int = 0
    admitted: float = 0.0
    prefill_s: float = 0.0
    widest: int = 0  # the most rows decoded together with this one

    @property
    def done(self) -> bool:
        """Whether the row has nothing more to compute."""
        return not self.turn.wants_forward


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
                ids = row.turn.encoded.input_ids
                row.node, row.reused = self.tree.insert(ids[:-1])  # the last token gives the first logits
                row.turn.pending, row.position = ids[-1:], len(ids) - 1
                admitted.append(row)
            rows = [r for r in admitted if isinstance(r, Row)]
            started = time.perf_counter()
            with torch.inference_mode():
                self._build(self.tree.unbuilt())
            for row in rows:
                row.turn.take_forced()
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
        (:func:`~planner_runtime.planners.local.grammar.closed`)."""
        allowed = closed_tools(tuple(t for t in request.tools if request.only is None or t.name in request.only))
        turn = self.planner.start_turn(request.messages, request.tools, request.sampling, constrain_to=allowed,
                                       score=request.tokens)
        if not turn.encoded.input_ids:
            raise PlannerError("the prompt is empty")
        return Row(request, turn)

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
        keep: list[int] = []
        spans: list[tuple[int, int]] = []  # each row's logits among those kept
        seen: dict[Node, list[int]] = {}
        for r in live:
            pending = r.turn.pending
            n = len(pending)
            at = len(ids)
            ids += pending
            positions += range(r.position, r.position + n)
            mine += [r.uid] * n
            r.position += n
            spans.append((len(keep), len(keep) + len(r.turn.keep())))
            keep += [at + k for k in r.turn.keep()]
            for node in r.node.chain():  # type: ignore[union-attr]
                seen.setdefault(node, []).extend(range(at, at + n))
            r.widest = max(r.widest, len(live))
        prefixes = attended(seen, len(ids), self.planner.model.device, joined=self._joined)
        query_owner = torch.tensor(mine, dtype=torch.long)
        past = self._owner.numel()
        self._owner = torch.cat([self._owner, query_owner])
        causal = torch.arange(past + len(ids))[None, :] <= (past + torch.arange(len(ids)))[:, None]
        mask = ((self._owner[None, :] == query_owner[:, None]) & causal)[None, None]
        logits = self._forward(torch.tensor([ids]), self._cache, mask, torch.tensor([positions]), prefixes, torch.tensor(keep))
        for r, (a, b) in zip(live, spans):
            r.turn.advance(logits[0, a:b])

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
        # prefill_s: computing the new part of the prompts admitted with this one, together
        timings = {"prefill_s": r.prefill_s, "generate_s": time.perf_counter() - r.admitted, "batch_rows": float(r.widest)}
        out = r.turn.output(timings)
        return Decoded(**dict(out), truncated=out.cut or r.turn.ran_out)
