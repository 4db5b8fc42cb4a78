"""Decoding one chat on the local model, the part the single-chat planner and the batch decoder share.

:class:`Decoding` holds what belongs to the tokenizer: it encodes a chat (:meth:`Decoding.encode`),
builds the grammar matcher past the prefill (:meth:`Decoding.matcher`), tells when unconstrained
output has ended and turns tokens into the answer's text. :class:`Turn` is one chat being decoded:
the caller feeds :attr:`Turn.pending` to the model, keeping the logits at :meth:`Turn.keep`, and
hands them to :meth:`Turn.advance`, which scores the tokens they predict, masks by the grammar,
samples (:func:`choose`), keeps the call within its token budget and takes the tokens the grammar
forces. How the forward pass runs (one chat with its kept KV, or packed rows) is the caller's.

A turn also keeps the token record RL needs (:class:`~planner_runtime.contract.TurnTokens`): each
completion token's log-probability under the raw logits at temperature 1, taken before the
grammar mask, and whether it was sampled. Prefill tokens (the ``<tool_call>`` opening the
harness forces) get logprob 0.0: their KV is often taken from the kept cache, so no forward pass
computes their logits. Tokens the grammar forces are scored from the same forward pass that
feeds them; those that end the call after the last sampled token are scored by one more pass
over just them, so every logprob is the model's own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, ToolSpec, TurnTokens, Usage
from planner_runtime.planners import PlannerContextExceeded, PlannerOutput, Sampling
from planner_runtime.planners.chat_template import IM_END, render_chat
from planner_runtime.planners.renderings import DEFAULT
from planner_runtime.planners.local.grammar import GrammarError, ToolCallGrammars, reaches_cap
from planner_runtime.planners.toolcalls import CLOSE, parse_tool_calls

if TYPE_CHECKING:
    import torch

END_TOKENS = (IM_END, "<|endoftext|>")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Encoded:
    """A chat as token ids: the prompt, then the prefill that opens the answer."""

    prompt_ids: list[int]
    prefill: str
    prefill_ids: list[int]

    @property
    def input_ids(self) -> list[int]:
        """What the model reads before its first choice."""
        return self.prompt_ids + self.prefill_ids


class Decoding:
    """The tokenizer's side of decoding: encoding, grammars, end of answer, answer text.

    ``context`` is the model's context length (``None``: unknown, never checked); ``vocabulary``
    names the token ids in the records (the model's release).
    """

    def __init__(self, tokenizer: Any, *, context: int | None, vocabulary: str, rendering: str = DEFAULT) -> None:
        self.tokenizer = tokenizer
        self.rendering = rendering  # how prompts write the tools: the model's own (renderings.py)
        self.context = context
        self.vocabulary = vocabulary
        self.grammars = ToolCallGrammars(tokenizer)
        vocab = tokenizer.get_vocab()
        eos = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        self.end_ids = frozenset(vocab[t] for t in END_TOKENS if t in vocab) | eos

    def encode(self, messages: Sequence[Message], tools: Sequence[ToolSpec], prefill: str, max_new_tokens: int) -> Encoded:
        """The chat's ids; a :class:`PlannerContextExceeded` when they and ``max_new_tokens``
        exceed the model's context."""
        prompt_ids = self.tokenizer(render_chat(messages, tools, rendering=self.rendering), add_special_tokens=False).input_ids
        prefill_ids = self.tokenizer(prefill, add_special_tokens=False).input_ids if prefill else []
        total = len(prompt_ids) + len(prefill_ids)
        if self.context is not None and total + max_new_tokens > self.context:
            raise PlannerContextExceeded(
                f"prompt of {total} tokens plus {max_new_tokens} new ones exceeds the model's context of {self.context}")
        return Encoded(prompt_ids, prefill, prefill_ids)

    def matcher(self, tools: Sequence[ToolSpec], prefill_ids: list[int], max_new_tokens: int, cap: int | None) -> Any:
        """A grammar matcher for one call of ``tools`` past the prefill, strings capped at ``cap``
        characters; ``None`` (and a logged warning) when the call must be decoded unconstrained."""
        try:
            matcher = self.grammars.matcher(tools, cap)
        except GrammarError as exc:
            log.warning("tool calls decoded unconstrained: %s", exc)
            return None
        if prefill_ids and not matcher.consume_tokens(prefill_ids):
            log.warning("the prefill does not fit the tool-call grammar (%s); decoding unconstrained", matcher.get_error())
            return None
        if self.grammars.closing(matcher, max_new_tokens) is None:
            log.warning("no call of %s fits in %d new tokens; the answer will be cut", [t.name for t in tools], max_new_tokens)
        return matcher

    def ended(self, generated: list[int]) -> bool:
        """Whether unconstrained output has ended: an end-of-turn token, or a closed call."""
        return generated[-1] in self.end_ids or CLOSE in self.tokenizer.decode(generated[-8:])

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """Each token's own bytes (a token may hold part of a character's UTF-8)."""
        tokenizer = self.grammars.tokenizer
        return [tokenizer.decode_bytes([t]) or self.tokenizer.decode([t]).encode() for t in ids]

    def answer(self, prefill: str, generated: list[int]) -> str:
        """The answer's text: the prefill and the generated tokens, up to the closed call or the end of turn."""
        text = prefill + self.tokenizer.decode(generated, skip_special_tokens=False)
        if CLOSE in text:
            text = text[: text.index(CLOSE) + len(CLOSE)]
        for end in END_TOKENS:
            text = text.split(end, 1)[0]
        return text


def mask(logits: "torch.Tensor", matcher: Any) -> int:
    """Set the logits of every token the grammar does not allow next to -inf, in place; how many
    tokens it allows."""
    import torch

    allowed = torch.frombuffer(bytearray(matcher.compute_logit_bias()), dtype=torch.uint8).to(logits.device)
    n = min(allowed.numel(), logits.numel())
    logits[:n].masked_fill_(allowed[:n] == 0, float("-inf"))
    logits[n:] = float("-inf")
    return int(torch.count_nonzero(allowed[:n]))


def choose(logits: "torch.Tensor", sampling: Sampling, generator: "torch.Generator | None") -> int:
    """The next token: the argmax when greedy, else a seeded draw at the sampling's temperature and top-p."""
    import torch

    if sampling.temperature <= 0 or generator is None:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < sampling.top_p
        sorted_probs = sorted_probs * keep
        picked = torch.multinomial(sorted_probs / sorted_probs.sum(), 1, generator=generator)
        return int(order[picked])
    return int(torch.multinomial(probs, 1, generator=generator))


def generator(sampling: Sampling, device: Any) -> "torch.Generator | None":
    """The seeded sampler's random source; ``None`` for greedy decoding."""
    import torch

    if sampling.temperature <= 0:
        return None
    return torch.Generator(device=device).manual_seed(sampling.seed)


class Turn:
    """One chat being decoded: its tokens so far, those still to feed, and their record.

    ``matcher`` ``None`` decodes unconstrained; ``cap`` is the string cap its grammar holds
    (``None``: none); ``score=False`` keeps no logprobs (the answer then has no token record).
    """

    def __init__(self, decoding: Decoding, encoded: Encoded, sampling: Sampling, matcher: Any,
                 random: "torch.Generator | None", cap: int | None, *, score: bool = True) -> None:
        self.decoding, self.encoded, self.sampling = decoding, encoded, sampling
        self.matcher, self.random = matcher, random
        self.cap = cap if matcher is not None else None
        self.generated: list[int] = []
        self.pending: list[int] = []  # tokens to feed next, their KV not yet computed
        prefill = len(encoded.prefill_ids)
        self.logprobs: list[float] | None = [0.0] * prefill if score else None
        self.sampled: list[bool] = [False] * prefill
        self.forced = 0  # tokens taken without a choice of the model's
        self.cut = False  # the budget forced the call's closing
        self.done = False  # nothing more to choose (the answer may still be unscored)

    @property
    def left(self) -> int:
        return self.sampling.max_new_tokens - len(self.generated)

    @property
    def unscored(self) -> int:
        """Completion tokens with no logprob yet: the last ones of :attr:`pending`."""
        if self.logprobs is None:
            return 0
        return len(self.encoded.prefill_ids) + len(self.generated) - len(self.logprobs)

    @property
    def wants_forward(self) -> bool:
        """Whether the model must read :attr:`pending`: to choose a token, or to score forced ones."""
        return not self.done or self.unscored > 0

    def keep(self) -> range:
        """The positions of :attr:`pending` whose logits :meth:`advance` needs, in order: those
        predicting the unscored tokens, then (unless done) the last one, for the next choice."""
        n = len(self.pending)
        return range(n - self.unscored - 1, n - 1 if self.done else n)

    def take_forced(self) -> None:
        """Append what the grammar forces next (within the budget); mark the turn done when the
        call is complete or the budget spent."""
        if self.left <= 0:
            self.done = True
        if self.done or self.matcher is None:
            return
        forced = self.matcher.compute_ff_tokens()[: self.left]
        if forced:
            self.matcher.consume_tokens(forced)
            self.generated += forced
            self.pending += forced
            self.sampled += [False] * len(forced)
            self.forced += len(forced)
        if self.matcher.is_stopped() or self.left <= 0:
            self.done = True

    def advance(self, logits: "torch.Tensor") -> None:
        """Take the logits at :meth:`keep` (``[len(keep), vocab]``): score the tokens they
        predict, then, unless done, choose the next token and take what the grammar forces after it."""
        import torch

        unscored = self.unscored
        if unscored:
            rows = torch.log_softmax(logits[:unscored].float(), dim=-1)
            targets = torch.tensor(self.pending[-unscored:], device=rows.device)
            self.logprobs += rows.gather(1, targets[:, None])[:, 0].tolist()  # type: ignore[operator]
        if self.done:
            self.pending = []
            return
        self._choose(logits[-1])
        self.take_forced()

    def _choose(self, logits: "torch.Tensor") -> None:
        import torch

        # scored before the mask: the model's own distribution, the one a trainer recomputes
        own = torch.log_softmax(logits.float(), dim=-1) if self.logprobs is not None else None
        allowed = mask(logits, self.matcher) if self.matcher is not None else None
        token = choose(logits, self.sampling, self.random)
        emitted = [token]
        if self.matcher is not None:
            # the call must still close in what is left of the budget, else it closes now instead
            closing = self.decoding.grammars.admit(self.matcher, token, self.left)
            if closing is None:
                log.warning("grammar rejected its own token (%s); finishing unconstrained", self.matcher.get_error())
                self.matcher = None
                self.cap = None
            elif closing != [token]:  # a closing, forced rather than sampled: the budget cut the call
                emitted = closing
                self.forced += len(closing) - 1
                self.cut = True
        self.sampled += [emitted == [token] and allowed != 1] + [False] * (len(emitted) - 1)
        if own is not None:
            self.logprobs.append(float(own[emitted[0]]))  # type: ignore[union-attr]
        self.generated += emitted
        self.pending = list(emitted)
        if self.matcher is not None:
            self.done = self.matcher.is_stopped()
        else:
            self.done = self.decoding.ended(self.generated)
        if self.left <= 0:
            self.done = True

    @property
    def ran_out(self) -> bool:
        """Whether the budget ended the answer before it ended of itself."""
        ended = self.matcher.is_stopped() if self.matcher is not None else bool(self.generated) and self.decoding.ended(self.generated)
        return not ended and self.left <= 0

    def tokens(self) -> TurnTokens | None:
        """The turn's token record; ``None`` when it keeps none or some token went unscored."""
        if self.logprobs is None or self.unscored:
            return None
        return TurnTokens(prompt_ids=tuple(self.encoded.prompt_ids), completion_ids=tuple(self.encoded.prefill_ids + self.generated),
                          logprobs=tuple(self.logprobs), sampled=tuple(self.sampled), tokenizer=self.decoding.vocabulary)

    def output(self, timings: dict[str, float]) -> PlannerOutput:
        """The answer: its text, the calls that parse, whether it was cut, usage and the token record."""
        text = self.decoding.answer(self.encoded.prefill, self.generated)
        calls, errors = parse_tool_calls(text)
        cut = self.cut or any(reaches_cap(call.arguments, self.cap) for call in calls)
        usage = Usage(prompt_tokens=len(self.encoded.prompt_ids), completion_tokens=len(self.encoded.prefill_ids) + len(self.generated))
        return PlannerOutput(text=text, tool_calls=tuple(calls), errors=tuple(errors), usage=usage, timings=timings,
                             cut=cut, tokens=self.tokens())
