"""The local planner: a frozen transformers causal LM that answers with Hermes-style tool calls.

By default it runs the embedded SmolLM2-135M-Instruct (see :mod:`model_store`); any transformers
model directory, ``.safetensors`` or ``.gguf`` file also works (:mod:`model`). The model never
trains here: it is loaded in eval mode with every parameter frozen and runs under
``torch.inference_mode``.

Decoding is a small loop of its own rather than ``generate`` (its steps are :mod:`decoding`'s,
shared with the batch decoder): it stops on ``</tool_call>`` as well as the end-of-turn token,
and it keeps the KV caches of recent calls, one per conversation (:mod:`prefix_cache`), so that
the unchanged start of each conversation's next prompt (system prompt, tools, earlier turns) is
not computed again, however the callers' turns interleave. By default the answer is constrained
by a grammar (:mod:`grammar`) to one call of an offered tool with arguments that match its
schema; tokens the grammar forces are appended without sampling and fed to the model together,
so a call costs a forward pass per real choice, not per token. Every answer carries its token
record (``PlannerOutput.tokens``: ids, logprobs, the sampled mask) unless ``token_records=False``.
Output is deterministic for the same input, seed and cache state; the cached and the uncached
paths can differ in the last bits of a float, which greedy decoding practically never sees.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, ToolSpec
from planner_runtime.deadline import expired
from planner_runtime.errors import PlannerError
from planner_runtime.planners import PlannerOutput, Sampling
from planner_runtime.planners.chat_template import TOOL_CALL_PREFILL, render_chat
from planner_runtime.planners.local.decoding import Decoding, Turn, generator
from planner_runtime.planners.local.heap import return_large_blocks
from planner_runtime.planners.local.kv_cache import growing_cache, reserve
from planner_runtime.planners.local.model import LoadedModel, known_model_dir, label_of, load_model, model_release
from planner_runtime.planners.local.prefix_cache import PrefixCache
from planner_runtime.planners.local.threads import intra_op_threads, use_threads

if TYPE_CHECKING:
    import torch


class LocalPlanner:
    """A frozen local model behind the :class:`~planner_runtime.planners.Planner` protocol.

    Nothing is read until the first :meth:`plan` or an explicit :meth:`load`. ``device`` and
    ``dtype`` are placed as :func:`model.placement` says (``"auto"``: CUDA when available). Long
    prompts are prefilled ``prefill_chunk`` tokens at a time into a KV buffer reserved for the
    whole step, which keeps a step's transient memory small and flat. ``constrained=True`` (the
    default) makes every answer one schema-valid call of an offered tool; a tool list whose
    schemas cannot be compiled is decoded unconstrained, with a logged warning.
    """

    name = "local"

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        dtype: "torch.dtype | str | None" = None,
        seed: int = 0,
        max_new_tokens: int = 96,
        max_string_chars: int | None = None,
        prefill_tool_call: bool = True,
        reuse_prefix_cache: bool = True,
        prefix_slots: int = 8,
        constrained: bool = True,
        cache_dir: Path | None = None,
        prefill_chunk: int = 512,
        threads: int | None = None,
        token_records: bool = True,
    ) -> None:
        self.model_spec = model
        self.device = device
        self.dtype = dtype
        self.seed = seed
        self.max_new_tokens = max_new_tokens
        # Constrained strings stop here (None: no cap; admit() alone keeps a call within the budget).
        self.max_string_chars = max_string_chars
        self.prefill_tool_call = prefill_tool_call
        self.reuse_prefix_cache = reuse_prefix_cache
        # conversations whose prompt KV is kept (collection interleaves one episode per worker)
        self.prefix_slots = prefix_slots
        self.constrained = constrained
        self.cache_dir = cache_dir
        self.prefill_chunk = prefill_chunk
        # intra-op threads on CPU; None: PLANNER_AGENT_THREADS or the process's cores, read at load
        self.threads = threads
        # PlannerOutput.tokens on every answer (costs a pass scoring the forced end of a call)
        self.token_records = token_records
        self.model_dir: Path | None = None
        self._release: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._decoding: Decoding | None = None
        self._prefixes: PrefixCache | None = None
        self._cache_kwarg = "past_key_values"
        self.last_reused_tokens = 0  # prompt tokens the last plan() took from the KV cache
        self.last_forced_tokens = 0  # tokens the last plan() took from the grammar, unsampled
        self.last_forward_passes = 0  # passes that chose a token (not the one scoring a forced tail)
        self.batchable = False  # set at load: whether the model's attention takes shared prompt KV
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return label_of(self.model_spec)

    @property
    def release(self) -> str:
        """The model's identity; carries a digest once the model directory is known."""
        if self._release is None:
            known = self.model_dir or known_model_dir(self.model_spec, self.cache_dir)
            if known is None:
                return f"local:{self.label}"
            self._release = model_release(known, self.label)
        return self._release

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self) -> Any:
        """The loaded (frozen) torch module, or ``None`` before :meth:`load`."""
        return self._model

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def decoding(self) -> Decoding:
        """The tokenizer's side of decoding, once :meth:`load` has run."""
        if self._decoding is None:
            raise PlannerError("the local model is not loaded")
        return self._decoding

    @property
    def cache_kwarg(self) -> str:
        """The model's forward argument for the KV cache (transformers 5.x renamed it)."""
        return self._cache_kwarg

    def load(self) -> LocalPlanner:
        """Resolve, provision if needed, and load the model; a no-op once loaded."""
        with self._lock:
            self._load_locked()
        return self

    def close(self) -> None:
        """Drop the model and its cache so the memory can be reclaimed."""
        with self._lock:
            self._model = self._tokenizer = self._prefixes = self._decoding = None

    def _load_locked(self) -> float:
        if self._model is not None:
            return 0.0
        started = time.perf_counter()
        import torch

        return_large_blocks()  # a long prompt's transient tensors are returned, not kept (see heap.py)
        self.threads = use_threads(torch, self.threads or intra_op_threads())
        loaded = load_model(self.model_spec, device=self.device, dtype=self.dtype, cache_dir=self.cache_dir)
        self._adopt(loaded, model_release(loaded.path, self.label))
        return time.perf_counter() - started

    def _adopt(self, loaded: LoadedModel, release: str) -> None:
        self.batchable, self._cache_kwarg = loaded.batchable, loaded.cache_kwarg
        self._release = release
        context = getattr(loaded.model.config, "max_position_embeddings", None)
        self._decoding = Decoding(loaded.tokenizer, context=context, vocabulary=release, rendering=loaded.rendering)
        self._model, self._tokenizer, self.model_dir = loaded.model, loaded.tokenizer, loaded.path

    @classmethod
    def over(cls, loaded: LoadedModel, release: str, **options: Any) -> LocalPlanner:
        """A planner over a model already in memory — an RL trainer's policy between updates.
        Nothing is loaded, frozen or switched here: the caller owns the model and must not change
        its weights while the planner runs, and makes a new planner after each update (the kept
        prompt KV was computed by the old weights)."""
        import torch

        planner = cls(loaded.path, **options)
        planner.threads = use_threads(torch, planner.threads or intra_op_threads())
        planner._adopt(loaded, release)
        return planner

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
        """The exact prompt text the model sees for this turn, prefill included."""
        return render_chat(messages, tools, prefill=self._prefill(tools), rendering=self.decoding.rendering)

    def encode(self, messages: Sequence[Message], tools: Sequence[ToolSpec], max_new_tokens: int) -> tuple[list[int], str, list[int]]:
        """The ids the model reads for this turn: ``(prompt_ids, prefill, prefill_ids)`` — what
        training data built from a trajectory must equal, token for token."""
        encoded = self.decoding.encode(messages, tools, self._prefill(tools), max_new_tokens)
        return encoded.prompt_ids, encoded.prefill, encoded.prefill_ids

    def _prefill(self, tools: Sequence[ToolSpec]) -> str:
        return TOOL_CALL_PREFILL if tools and self.prefill_tool_call else ""

    def string_cap(self, max_new_tokens: int) -> int | None:
        """Characters a constrained string may hold: ``max_string_chars`` (``None``, the default:
        any). A cap is not what makes a call close within ``max_new_tokens`` — the grammar's
        ``admit`` closes it from the tokens actually left, and flags it cut — so none is derived
        from the budget; a string ended by a set cap flags the call cut too (:func:`reaches_cap`)."""
        if self.max_string_chars is None:
            return None
        return max(8, self.max_string_chars)

    def start_turn(self, messages: Sequence[Message], tools: Sequence[ToolSpec], sampling: Sampling, *,
                   constrain_to: Sequence[ToolSpec] | None = None, score: bool | None = None) -> Turn:
        """A chat encoded, with its grammar (one call of ``constrain_to``, by default ``tools``)
        and its sampler, as this planner decodes it; a
        :class:`~planner_runtime.planners.PlannerContextExceeded` when it does not fit."""
        decoding, budget = self.decoding, sampling.max_new_tokens
        encoded = decoding.encode(messages, tools, self._prefill(tools), budget)
        allowed = tools if constrain_to is None else constrain_to
        cap = self.string_cap(budget)
        matcher = decoding.matcher(allowed, encoded.prefill_ids, budget, cap) if self.constrained and allowed else None
        return Turn(decoding, encoded, sampling, matcher, generator(sampling, self._model.device), cap,
                    score=self.token_records if score is None else score)

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        sampling = sampling or Sampling(max_new_tokens=self.max_new_tokens, seed=self.seed)
        with self._lock:
            load_s = self._load_locked()
            out = self._generate(messages, tools, sampling)
        if load_s:
            out = out.model_copy(update={"timings": {"load_s": load_s, **out.timings}})
        return out

    def _generate(self, messages: Sequence[Message], tools: Sequence[ToolSpec], sampling: Sampling) -> PlannerOutput:
        import torch

        use_threads(torch, self.threads)  # per calling thread: serve and collect plan on their own
        started = time.perf_counter()
        turn = self.start_turn(messages, tools, sampling)
        grammar_s = time.perf_counter() - started
        input_ids = turn.encoded.input_ids

        with torch.inference_mode():
            room = len(input_ids) + sampling.max_new_tokens
            if self.reuse_prefix_cache:
                cache, reused = self._kept().take(input_ids, room)
            else:
                cache, reused = growing_cache(self._model.config), 0
            reserve(cache, room)
            self.last_reused_tokens = reused
            started = time.perf_counter()
            turn.pending = input_ids[reused:]
            turn.take_forced()
            forwards = 0
            prefill_s = 0.0
            while turn.wants_forward:
                if expired():  # the episode gave up on this turn: free the model for the next one
                    break
                choosing = not turn.done
                turn.advance(self._forward(turn.pending, cache, turn.keep()))
                forwards += choosing
                if forwards == 1 and not prefill_s:
                    prefill_s = time.perf_counter() - started
            generate_s = time.perf_counter() - started - prefill_s
            # Tokens still pending were never fed (the last sampled one, forced ones at the end).
            fed = (input_ids + turn.generated)[: cache.get_seq_length()]
        if self.reuse_prefix_cache:
            self._kept().put(cache, fed, prompt=len(input_ids))
        self.last_forced_tokens, self.last_forward_passes = turn.forced, forwards

        timings = {"prefill_s": prefill_s, "generate_s": generate_s}
        if self.constrained and tools:
            timings["grammar_s"] = grammar_s
        return turn.output(timings)

    def _kept(self) -> PrefixCache:
        """The kept prompt KV, made on first use (its empty caches need the loaded model's config)."""
        if self._prefixes is None:
            config = self._model.config
            self._prefixes = PrefixCache(lambda: growing_cache(config), slots=self.prefix_slots)
        return self._prefixes

    def _forward(self, ids: list[int], cache: Any, keep: range) -> "torch.Tensor":
        """Logits at the ``keep`` positions of ``ids`` (``[len(keep), vocab]``); a long run of ids
        goes in chunks, so attention scores and activations stay the size of one chunk whatever
        the prompt's length."""
        import torch

        step = max(1, self.prefill_chunk)
        device = self._model.device
        kept: list[torch.Tensor] = []
        for start in range(0, len(ids), step):
            piece = ids[start : start + step]
            wanted = [k - start for k in keep if start <= k < start + len(piece)]
            tensor = torch.tensor([piece], dtype=torch.long, device=device)
            # positions by index: an int keeps a strided slice of the hidden states, and the
            # head's matmul then copied its whole weight matrix (56 MB) on every step
            at = torch.tensor(wanted or [len(piece) - 1], device=device)
            out = self._model(input_ids=tensor, **{self._cache_kwarg: cache}, use_cache=True, logits_to_keep=at)
            if wanted:
                kept.append(out.logits[0])
        return kept[0] if len(kept) == 1 else torch.cat(kept)
