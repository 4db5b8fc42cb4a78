"""KV caches that grow in place, for the local model's decoding.

transformers' ``DynamicCache`` concatenates each layer's whole cache with every step's keys and
values; at a 1.5k-token context a decode step then copies every layer. :func:`growing_cache`
swaps its full-attention layers for ones that write into buffers with room to grow, and
:func:`reserve` sizes them for a whole step up front. The single-chat planner, the prompt KV it
keeps between calls (:mod:`prefix_cache`) and the batch decoder all use them. Importing this
module does not import transformers.
"""

from __future__ import annotations

from typing import Any


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
