"""The local planner: a frozen transformers causal LM that answers with Hermes-style tool calls.

By default it runs the embedded SmolLM2-135M-Instruct (see :mod:`model_store`); any transformers
model directory, ``.safetensors`` or ``.gguf`` file also works. The model never trains here: it is
loaded in eval mode with every parameter frozen and runs under ``torch.inference_mode``.

Decoding is a small loop of its own rather than ``generate``: it stops on ``</tool_call>`` as
well as the end-of-turn token, and it keeps the KV caches of recent calls, one per conversation
(:mod:`prefix_cache`), so that the unchanged start of each conversation's next prompt (system
prompt, tools, earlier turns) is not computed again, however the callers' turns interleave.
By default the answer is constrained by a grammar (:mod:`grammar`) to one call of an offered tool
with arguments that match its schema; tokens the grammar forces are appended without sampling
and fed to the model together, so a call costs a forward pass per real choice, not per token.
Output is deterministic for the same input, seed and cache state; the cached and the uncached
paths can differ in the last bits of a float, which greedy decoding practically never sees.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from planner_runtime.contract import Message, ToolSpec, Usage
from planner_runtime.deadline import expired
from planner_runtime.errors import ModelProvisionError, PlannerError
from planner_runtime.planners import PlannerContextExceeded, PlannerOutput, Sampling
from planner_runtime.planners.chat_template import IM_END, TOOL_CALL_PREFILL, render_chat
from planner_runtime.planners.local.grammar import GrammarError, ToolCallGrammars, reaches_cap
from planner_runtime.planners.local.threads import intra_op_threads, use_threads
from planner_runtime.planners.local.heap import return_large_blocks
from planner_runtime.planners.local.model_store import (
    EMBEDDED_ALIASES,
    EMBEDDED_NAME,
    embedded_model_dir,
    dtype_variant,
    is_model_dir,
    quiet_progress_bars,
    resolve_model_path,
)
from planner_runtime.planners.local.prefix_cache import PrefixCache, shared_length  # noqa: F401 - serving reads it here
from planner_runtime.planners.toolcalls import CLOSE, parse_tool_calls
from planner_runtime.planners.local.attention import install

if TYPE_CHECKING:
    import torch

_END_TOKENS = (IM_END, "<|endoftext|>")
log = logging.getLogger(__name__)


def model_release(path: Path, label: str) -> str:
    """``local:<label>@<digest>``, the digest taken over the config and the weight files' sizes."""
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return f"local:{label}@{digest.hexdigest()[:12]}"


class LocalPlanner:
    """A frozen local model behind the :class:`~planner_runtime.planners.Planner` protocol.

    Nothing is read until the first :meth:`plan` or an explicit :meth:`load`. ``device="auto"``
    picks CUDA when available, else the CPU; the default dtype is bfloat16 on CUDA and on CPUs
    with native bfloat16 arithmetic (AVX512-BF16 or AMX), else float32. float32 weights wanted in
    bfloat16 are converted once into a cached copy (:func:`model_store.dtype_variant`), so loading
    maps half the bytes. Long prompts are prefilled ``prefill_chunk`` tokens at a time into a KV
    buffer reserved for the whole step, which keeps a step's transient memory small and flat.
    ``constrained=True`` (the
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
        self.model_dir: Path | None = None
        self._release: str | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._end_ids: frozenset[int] = frozenset()
        self._prefixes: PrefixCache | None = None
        self._cache_kwarg = "past_key_values"
        self._grammars: ToolCallGrammars | None = None
        self.last_reused_tokens = 0  # prompt tokens the last plan() took from the KV cache
        self.last_forced_tokens = 0  # tokens the last plan() took from the grammar, unsampled
        self.last_forward_passes = 0
        self.batchable = False  # set at load: whether the model's attention takes shared prompt KV
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        spec = self.model_spec
        if spec is None or (isinstance(spec, str) and spec.strip().lower() in EMBEDDED_ALIASES):
            return EMBEDDED_NAME
        path = Path(spec)
        return path.parent.name if path.suffix == ".safetensors" else path.stem if path.is_file() else path.name

    @property
    def release(self) -> str:
        """The model's identity; carries a digest once the model directory is known."""
        if self._release is None:
            known = self.model_dir or self._cheap_model_dir()
            if known is None:
                return f"local:{self.label}"
            self._release = model_release(known, self.label)
        return self._release

    def _cheap_model_dir(self) -> Path | None:
        # Only what needs no conversion: reading the release must never start a 20 s job.
        spec = self.model_spec
        if spec is None or (isinstance(spec, str) and spec.strip().lower() in EMBEDDED_ALIASES):
            candidate = embedded_model_dir(self.cache_dir)
        else:
            candidate = Path(spec).expanduser()
            candidate = candidate.parent if candidate.suffix == ".safetensors" else candidate
        return candidate if candidate.is_dir() and is_model_dir(candidate) else None

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

    def load(self) -> LocalPlanner:
        """Resolve, provision if needed, and load the model; a no-op once loaded."""
        with self._lock:
            self._load_locked()
        return self

    def close(self) -> None:
        """Drop the model and its cache so the memory can be reclaimed."""
        with self._lock:
            self._model = self._tokenizer = self._prefixes = self._grammars = None

    def _load_locked(self) -> float:
        if self._model is not None:
            return 0.0
        started = time.perf_counter()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        return_large_blocks()  # a long prompt's transient tensors are returned, not kept (see heap.py)
        self.threads = use_threads(torch, self.threads or intra_op_threads())
        path = resolve_model_path(self.model_spec, self.cache_dir)
        device, dtype = self._placement(torch)
        weights = dtype_variant(path, str(dtype).removeprefix("torch."), self.cache_dir)
        try:
            with quiet_progress_bars():
                tokenizer = AutoTokenizer.from_pretrained(path)
                model = AutoModelForCausalLM.from_pretrained(weights, dtype=dtype).to(device)
        except (OSError, ValueError) as exc:
            raise ModelProvisionError(f"could not load the model in {path}: {exc}") from exc
        model.eval()
        model.requires_grad_(False)
        # grouped-query SDPA without copying the cache; where it installs, serve can batch this model
        self.batchable = install(model)
        vocab = tokenizer.get_vocab()
        self._end_ids = frozenset(vocab[t] for t in _END_TOKENS if t in vocab) | (
            {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
        )
        # transformers 5.x renamed the forward argument from past_key_values to cache.
        if "cache" in inspect.signature(model.forward).parameters:
            self._cache_kwarg = "cache"
        self._model, self._tokenizer, self.model_dir = model, tokenizer, path
        self._grammars = ToolCallGrammars(tokenizer)
        self._release = model_release(path, self.label)
        return time.perf_counter() - started

    def _placement(self, torch: Any) -> tuple[Any, Any]:
        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise PlannerError(f"device {self.device!r} asked for, but CUDA is not available")
        dtype = self.dtype
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        if dtype is None:
            dtype = torch.bfloat16 if device.startswith("cuda") or native_bfloat16(torch) else torch.float32
        return torch.device(device), dtype

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
        """The exact prompt text the model sees for this turn, prefill included."""
        return render_chat(messages, tools, prefill=self._prefill(tools))

    def _prefill(self, tools: Sequence[ToolSpec]) -> str:
        return TOOL_CALL_PREFILL if tools and self.prefill_tool_call else ""

    def plan(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, sampling: Sampling | None = None
    ) -> PlannerOutput:
        sampling = sampling or Sampling(max_new_tokens=self.max_new_tokens, seed=self.seed)
        with self._lock:
            load_s = self._load_locked()
            text, usage, timings, cut, cap = self._generate(messages, tools, sampling)
        if load_s:
            timings = {"load_s": load_s, **timings}
        calls, errors = parse_tool_calls(text)
        cut = cut or any(reaches_cap(call.arguments, cap) for call in calls)
        return PlannerOutput(text=text, tool_calls=tuple(calls), errors=tuple(errors), usage=usage, timings=timings, cut=cut)

    def _generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], sampling: Sampling
    ) -> tuple[str, Usage, dict[str, float], bool, int | None]:
        """The answer's text, usage and timings; whether the budget forced the call's closing; the
        string cap the grammar held the answer to (``None``: none, or it was decoded unconstrained)."""
        import torch

        use_threads(torch, self.threads)  # per calling thread: serve and collect plan on their own
        prompt_ids, prefill, prefill_ids = self.encode(messages, tools, sampling.max_new_tokens)
        input_ids = prompt_ids + prefill_ids
        generator = self.generator(sampling)
        started = time.perf_counter()
        matcher = self.matcher(tools, prefill_ids, sampling.max_new_tokens)
        grammar_s = time.perf_counter() - started

        with torch.inference_mode():
            room = len(input_ids) + sampling.max_new_tokens
            if self.reuse_prefix_cache:
                cache, reused = self._kept().take(input_ids, room)
            else:
                cache, reused = growing_cache(self._model.config), 0
            reserve(cache, room)
            self.last_reused_tokens = reused
            started = time.perf_counter()
            pending = input_ids[reused:]
            generated: list[int] = []
            forced = forwards = 0
            cut = False
            prefill_s = 0.0
            while len(generated) < sampling.max_new_tokens:
                if expired():  # the episode gave up on this turn: free the model for the next one
                    break
                if matcher is not None:
                    ff = matcher.compute_ff_tokens()[: sampling.max_new_tokens - len(generated)]
                    if ff:
                        matcher.consume_tokens(ff)
                        generated += ff
                        pending += ff
                        forced += len(ff)
                        if matcher.is_stopped() or len(generated) >= sampling.max_new_tokens:
                            break
                logits = self._forward(pending, cache)
                forwards += 1
                if forwards == 1:
                    prefill_s = time.perf_counter() - started
                if matcher is not None:
                    _mask(logits, matcher)
                token = _choose(logits, sampling, generator)
                if matcher is not None:
                    # the call must still close in what is left, else it closes now instead
                    emitted = self.admit(matcher, token, sampling.max_new_tokens - len(generated))
                    if emitted is None:
                        log.warning("grammar rejected its own token (%s); finishing unconstrained", matcher.get_error())
                        matcher, emitted = None, [token]
                    if emitted != [token]:  # a closing, forced rather than sampled: the budget cut the call
                        forced += len(emitted) - 1
                        cut = True
                    generated += emitted
                    pending = emitted
                    if matcher is not None:
                        if matcher.is_stopped():
                            break
                        continue
                else:
                    generated.append(token)
                    pending = [token]
                if self.ended(generated):
                    break
            generate_s = time.perf_counter() - started - prefill_s
            # Tokens still pending were never fed (the last sampled one, forced ones at the end).
            fed = (input_ids + generated)[: cache.get_seq_length()]
        if self.reuse_prefix_cache:
            self._kept().put(cache, fed, prompt=len(input_ids))
        self.last_forced_tokens, self.last_forward_passes = forced, forwards

        text = self.answer(prefill, generated)
        usage = Usage(prompt_tokens=len(prompt_ids), completion_tokens=len(prefill_ids) + len(generated))
        timings = {"prefill_s": prefill_s, "generate_s": generate_s}
        if self.constrained and tools:
            timings["grammar_s"] = grammar_s
        cap = self.string_cap(sampling.max_new_tokens) if matcher is not None else None
        return text, usage, timings, cut, cap

    def string_cap(self, max_new_tokens: int) -> int | None:
        """Characters a constrained string may hold: ``max_string_chars`` (``None``, the default:
        any). A cap is not what makes a call close within ``max_new_tokens`` — :meth:`admit`
        closes it from the tokens actually left, and flags it cut — so none is derived from the
        budget; a string ended by a set cap flags the call cut too (:func:`reaches_cap`)."""
        if self.max_string_chars is None:
            return None
        return max(8, self.max_string_chars)

    def encode(self, messages: Sequence[Message], tools: Sequence[ToolSpec], max_new_tokens: int) -> tuple[list[int], str, list[int]]:
        """The prompt's token ids, the prefill text and its ids; a :class:`PlannerContextExceeded`
        when they and ``max_new_tokens`` exceed the model's context."""
        tokenizer = self._tokenizer
        prefill = self._prefill(tools)
        prompt_ids = tokenizer(render_chat(messages, tools), add_special_tokens=False).input_ids
        prefill_ids = tokenizer(prefill, add_special_tokens=False).input_ids if prefill else []
        total = len(prompt_ids) + len(prefill_ids)
        limit = getattr(self._model.config, "max_position_embeddings", None)
        if limit is not None and total + max_new_tokens > limit:
            raise PlannerContextExceeded(f"prompt of {total} tokens plus {max_new_tokens} new ones exceeds the model's context of {limit}")
        return prompt_ids, prefill, prefill_ids

    def generator(self, sampling: Sampling) -> "torch.Generator | None":
        """The seeded sampler's random source; ``None`` for greedy decoding."""
        import torch

        if sampling.temperature <= 0:
            return None
        return torch.Generator(device=self._model.device).manual_seed(sampling.seed)

    def ended(self, generated: list[int]) -> bool:
        """Whether unconstrained output has ended: an end-of-turn token, or a closed call."""
        return generated[-1] in self._end_ids or CLOSE in self._tokenizer.decode(generated[-8:])

    def answer(self, prefill: str, generated: list[int]) -> str:
        """The answer's text: the prefill and the generated tokens, up to the closed call or the end of turn."""
        text = prefill + self._tokenizer.decode(generated, skip_special_tokens=False)
        if CLOSE in text:
            text = text[: text.index(CLOSE) + len(CLOSE)]
        for end in _END_TOKENS:
            text = text.split(end, 1)[0]
        return text

    @property
    def cache_kwarg(self) -> str:
        """The model's forward argument for the KV cache (transformers 5.x renamed it)."""
        return self._cache_kwarg

    def admit(self, matcher: Any, token: int, left: int) -> list[int] | None:
        """What to emit for a sampled ``token`` with ``left`` tokens of the budget to go, so the
        call still closes within the budget (:meth:`ToolCallGrammars.admit`)."""
        return self._grammars.admit(matcher, token, left)

    def matcher(self, tools: Sequence[ToolSpec], prefill_ids: list[int], max_new_tokens: int) -> Any:
        """A grammar matcher past the prefill, or ``None`` to decode unconstrained."""
        if not (self.constrained and tools and self._grammars is not None):
            return None
        try:
            matcher = self._grammars.matcher(tools, self.string_cap(max_new_tokens))
        except GrammarError as exc:
            log.warning("tool calls decoded unconstrained: %s", exc)
            return None
        if prefill_ids and not matcher.consume_tokens(prefill_ids):
            log.warning("the prefill does not fit the tool-call grammar (%s); decoding unconstrained", matcher.get_error())
            return None
        if self._grammars.closing(matcher, max_new_tokens) is None:
            log.warning("no call of %s fits in %d new tokens; the answer will be cut", [t.name for t in tools], max_new_tokens)
        return matcher

    def _kept(self) -> PrefixCache:
        """The kept prompt KV, made on first use (its empty caches need the loaded model's config)."""
        if self._prefixes is None:
            config = self._model.config
            self._prefixes = PrefixCache(lambda: growing_cache(config), slots=self.prefix_slots)
        return self._prefixes

    def _forward(self, ids: list[int], cache: Any) -> "torch.Tensor":
        """Logits after ``ids``; a long run of ids goes in chunks, so attention scores and
        activations stay the size of one chunk whatever the prompt's length."""
        import torch

        step = max(1, self.prefill_chunk)
        for start in range(0, len(ids), step):
            piece = ids[start : start + step]
            tensor = torch.tensor([piece], dtype=torch.long, device=self._model.device)
            # the last position by index: an int keeps a strided slice of the hidden states, and
            # the head's matmul then copied its whole weight matrix (56 MB) on every step
            last = torch.tensor([len(piece) - 1], device=self._model.device)
            out = self._model(input_ids=tensor, **{self._cache_kwarg: cache}, use_cache=True, logits_to_keep=last)
        return out.logits[0, -1]


def _mask(logits: "torch.Tensor", matcher: Any) -> None:
    """Set the logits of every token the grammar does not allow next to -inf, in place."""
    import torch

    allowed = torch.frombuffer(bytearray(matcher.compute_logit_bias()), dtype=torch.uint8).to(logits.device)
    n = min(allowed.numel(), logits.numel())
    logits[:n].masked_fill_(allowed[:n] == 0, float("-inf"))
    logits[n:] = float("-inf")


def _choose(logits: "torch.Tensor", sampling: Sampling, generator: "torch.Generator | None") -> int:
    import torch

    if sampling.temperature <= 0 or generator is None:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < sampling.top_p
        sorted_probs = sorted_probs * keep
        choice = torch.multinomial(sorted_probs / sorted_probs.sum(), 1, generator=generator)
        return int(order[choice])
    return int(torch.multinomial(probs, 1, generator=generator))



def native_bfloat16(torch: Any) -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX tiles)."""
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def reserve(cache: Any, tokens: int) -> None:
    """Make every growing layer of ``cache`` hold ``tokens`` positions without reallocating."""
    for layer in cache.layers:
        grow = getattr(layer, "reserve", None)
        if grow is not None:
            grow(tokens)


def growing_cache(config: Any) -> Any:
    """A ``DynamicCache`` whose full-attention layers write into buffers with room to grow.

    The stock layer concatenates the whole cache with each step's keys and values, so a decode
    step at a 1.5k-token context copies every layer's cache; here a step writes only its own
    tokens, and the buffer is reallocated (an eighth larger) only when it fills up."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=config)
    cache.layers = [_GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


def _growing_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        _kbuf: Any = None
        _vbuf: Any = None
        _n = 0
        _want = 0  # positions to allocate at once, from reserve()

        def reserve(self, tokens: int) -> None:
            self._want = max(self._want, tokens)
            if self._kbuf is not None and tokens > self._kbuf.shape[-2]:
                self._grow(self._kbuf[..., :0, :], self._vbuf[..., :0, :], tokens)

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, add = self._n, key_states.shape[-2]
            buf = self._kbuf
            if buf is None or n + add > buf.shape[-2] or buf.shape[:2] != key_states.shape[:2]:
                self._grow(key_states, value_states, n + add)
            self._kbuf[..., n : n + add, :] = key_states
            self._vbuf[..., n : n + add, :] = value_states
            self._view(n + add)
            return self.keys, self.values

        def _grow(self, like_k: Any, like_v: Any, needed: int) -> None:
            if needed <= self._want:
                room = self._want
            else:  # little slack: a long prefix's cache is big
                room = needed + max(64, needed // 8)
            kbuf = like_k.new_empty(*like_k.shape[:2], room, like_k.shape[-1])
            vbuf = like_v.new_empty(*like_v.shape[:2], room, like_v.shape[-1])
            if self._n:
                kbuf[..., : self._n, :] = self._kbuf[..., : self._n, :]
                vbuf[..., : self._n, :] = self._vbuf[..., : self._n, :]
            self._kbuf, self._vbuf = kbuf, vbuf
            self._view(self._n)

        def _view(self, n: int) -> None:
            self._n = n
            self.keys, self.values = self._kbuf[..., :n, :], self._vbuf[..., :n, :]

        def get_seq_length(self) -> int:
            return self._n

        def nbytes(self) -> int:
            """Bytes of the buffers, reserved room included."""
            return 0 if self._kbuf is None else self._kbuf.nbytes + self._vbuf.nbytes

        def crop(self, tokens_to_remove: int) -> None:
            if tokens_to_remove > 0:
                raise ValueError("crop takes a negative number of tokens to remove from the end")
            if tokens_to_remove and self._kbuf is not None:
                self._view(max(0, self._n + tokens_to_remove))

        def keep_positions(self, indices: Any) -> None:
            """Keep only the cached positions at ``indices`` (ascending), moved to the front."""
            if self._kbuf is not None:
                n, indices = int(indices.numel()), indices.to(self._kbuf.device)
                self._kbuf[..., :n, :] = self._kbuf.index_select(-2, indices)
                self._vbuf[..., :n, :] = self._vbuf.index_select(-2, indices)
                self._view(n)

        def batch_select_indices(self, indices: Any) -> None:
            if self._kbuf is not None:
                self._kbuf, self._vbuf = self._kbuf[indices], self._vbuf[indices]
                self._view(self._n)

        def batch_repeat_interleave(self, repeats: int) -> None:
            if self._kbuf is not None:
                self._kbuf = self._kbuf.repeat_interleave(repeats, dim=0)
                self._vbuf = self._vbuf.repeat_interleave(repeats, dim=0)
                self._view(self._n)

        def reset(self) -> None:
            self._kbuf = self._vbuf = None
            self._n = 0
            super().reset()

    return GrowingLayer


class _LazyGrowingLayer:
    """Builds the layer class on first use, so importing this module does not import transformers."""

    cls: type | None = None

    def __call__(self) -> Any:
        if self.cls is None:
            self.cls = _growing_layer_class()
        return self.cls()


_GrowingLayer = _LazyGrowingLayer()
