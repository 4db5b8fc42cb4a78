"""The memory store on real SQLite files: kinds, FTS5 ranking, kind and recency weighting,
forget, export → import, another process's writes, and intents firing and expiring."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta

import pytest

from planner_runtime.contract import utcnow
from planner_runtime.errors import ConfigError, StoreError
from planner_runtime.harness.memory.episodes import (
    MemoryKind,
    MemoryStore,
    Trigger,
    due_intents,
    episode_context,
    export_jsonl,
    import_jsonl,
    profile_path,
)
from planner_runtime.harness.memory.records import Memory


@pytest.fixture
def mem(tmp_path):
    with MemoryStore(tmp_path / "memory.sqlite", embedder=None) as store:
        yield store


def _add(store, text, kind="preference", **kw):
    return store.add(Memory(kind=kind, text=text, **kw))


def test_every_kind_is_stored_and_read_back_from_the_file(tmp_path, mem):
    _add(mem, "I wake up at 6:45 on weekdays")
    _add(mem, "My sister Ada lives in London", "fact")
    _add(mem, '2026-01-02: asked "Set an alarm"; finished', "episodic", provenance="traj_abc", confidence=0.7)
    _add(mem, "Buy milk", "intent", trigger=Trigger.parse("app:Messages"), expires_at=utcnow() + timedelta(days=2))
    with MemoryStore(tmp_path / "memory.sqlite", embedder=None) as again:  # a second handle on the same file
        got = {m.kind: m for m in again.list()}
    assert set(got) == set(MemoryKind)
    assert got[MemoryKind.episodic].provenance == "traj_abc" and got[MemoryKind.episodic].confidence == 0.7
    assert str(got[MemoryKind.intent].trigger) == "app:Messages" and got[MemoryKind.intent].expires_at > utcnow()
    assert [m.kind for m in mem.list(kinds=[MemoryKind.fact])] == [MemoryKind.fact]


def test_records_reject_what_cannot_be_a_memory():
    with pytest.raises(ValueError, match="needs a trigger"):
        Memory(kind="intent", text="Buy milk")
    with pytest.raises(ValueError, match="only intents"):
        Memory(kind="fact", text="x", trigger=Trigger.parse("app:Clock"))
    with pytest.raises(ValueError, match="KIND:VALUE"):
        Trigger.parse("tomorrow")
    with pytest.raises(ValueError, match="ISO"):
        Trigger.parse("time:next tuesday")


def test_fts_ranks_the_matching_memory_first_and_stems_words(mem):
    _add(mem, "I prefer dark mode on all apps")
    _add(mem, "I wake up at 6:45 on weekdays")
    _add(mem, "My dentist is Dr Smith", "fact")
    hits = mem.search("Set my usual wake-up alarm")
    assert [h.memory.text for h in hits] == ["I wake up at 6:45 on weekdays"]
    assert mem.search("waking")[0].memory.text.startswith("I wake up")  # porter stemming
    assert mem.search('dentist" OR *') and mem.search("()") == []  # FTS syntax in a query is just words


def test_in_a_large_store_a_rare_word_still_ranks_and_common_words_score_the_newest(mem, monkeypatch):
    from planner_runtime.harness.memory import search as memory_search

    monkeypatch.setattr(memory_search, "COMMON_ROWS", 20)
    monkeypatch.setattr(memory_search, "RECENT_SCAN", 10)
    dentist = _add(mem, "My dentist lives near the station", "fact")
    mem.add_many(Memory(kind="fact", text=f"Friend number {i} lives near the station") for i in range(60))
    assert mem.search("where does my dentist live", k=1, touch=False)[0].memory.id == dentist.id
    newest = mem.search("lives station", k=3, touch=False)
    assert {h.memory.text for h in newest} <= {f"Friend number {i} lives near the station" for i in range(50, 60)}


def test_a_preference_outranks_an_equally_relevant_episode_and_newer_outranks_older(mem):
    now = utcnow()
    _add(mem, "coffee with oat milk", "episodic")
    _add(mem, "coffee with oat milk", "preference")
    assert [h.memory.kind for h in mem.search("oat milk coffee", touch=False)] == [MemoryKind.preference, MemoryKind.episodic]
    old = _add(mem, "tea without sugar", "fact", created_at=now - timedelta(days=120))
    new = _add(mem, "tea without sugar", "fact", created_at=now - timedelta(days=1))
    hits = mem.search("tea sugar", kinds=[MemoryKind.fact], touch=False)
    assert [h.memory.id for h in hits] == [new.id, old.id] and hits[0].score > hits[1].score
    unsure = _add(mem, "tea without sugar", "fact", created_at=now - timedelta(days=1), confidence=0.2)
    assert mem.search("tea sugar", kinds=[MemoryKind.fact], touch=False)[-1].memory.id == unsure.id


def test_a_kind_filter_keeps_only_those_kinds_whether_the_others_are_few_or_many(mem, monkeypatch):
    from planner_runtime.harness.memory import search as memory_search

    monkeypatch.setattr(memory_search, "COMMON_ROWS", 20)
    mem.add(Memory(kind="intent", text="coffee beans to buy", trigger=Trigger.parse("app:Shopping")))
    prefs = [_add(mem, f"I like coffee number {i}", "preference") for i in range(3)]
    # few rows of the other kinds (one intent): left out through the kind index
    hits = mem.search("coffee", k=10, kinds=[MemoryKind.preference, MemoryKind.fact, MemoryKind.episodic], touch=False)
    assert {h.memory.id for h in hits} == {p.id for p in prefs}
    # many rows of the other kinds: each match is looked up; preferences still come back
    mem.add_many(Memory(kind="episodic", text=f"asked for coffee at {i}") for i in range(40))
    hits = mem.search("coffee", k=10, kinds=[MemoryKind.preference], touch=False)
    assert {h.memory.id for h in hits} == {p.id for p in prefs}
    assert {h.memory.kind for h in mem.search("coffee", k=50, kinds=[MemoryKind.intent, MemoryKind.episodic], touch=False)} == {MemoryKind.intent, MemoryKind.episodic}


def test_a_hit_carries_the_whole_stored_record(mem):
    now = utcnow()
    intent = mem.add(Memory(kind="intent", text="Move the dentist appointment", trigger=Trigger.parse("app:Calendar"), expires_at=now + timedelta(days=3), confidence=0.8))
    mem.mark_fired([intent.id], now - timedelta(hours=1))
    mem.touch([intent.id], now - timedelta(hours=2))
    hit = mem.search("dentist appointment", touch=False)[0]
    assert hit.memory == mem.get(intent.id)
    assert hit.memory.trigger == intent.trigger and hit.memory.expires_at == intent.expires_at and hit.memory.fired_at is not None


def test_search_marks_what_it_returned_as_used(mem):
    m = _add(mem, "I wake up at 6:45", created_at=utcnow() - timedelta(days=60))
    assert mem.get(m.id).last_used_at is None
    mem.search("wake")
    assert mem.get(m.id).last_used_at > utcnow() - timedelta(minutes=1)


def test_forget_by_id_and_by_query(mem):
    a = _add(mem, "I go to the gym on Mondays", "fact")
    _add(mem, "The gym closes at 22:00 on Sundays", "fact")
    keep = _add(mem, "I wake up at 6:45")
    assert mem.forget([a.id, "mem_nothere"]) == 1
    assert [m.text for m in mem.matching("gym sundays")] == ["The gym closes at 22:00 on Sundays"]
    assert mem.forget(m.id for m in mem.matching("gym")) == 1
    assert [m.id for m in mem.list()] == [keep.id]
    assert mem.search("gym") == []  # gone from the FTS index too


def test_export_then_import_round_trips_into_another_profile(tmp_path, mem):
    originals = [
        _add(mem, "I wake up at 6:45 on weekdays"),
        _add(mem, "Buy milk", "intent", trigger=Trigger.parse("time:2030-01-01T09:00"), expires_at=utcnow() + timedelta(days=9)),
        _add(mem, "asked something", "episodic", provenance="traj_1", confidence=0.4),
    ]
    out = tmp_path / "export.jsonl"
    assert export_jsonl(mem, out) == 3
    assert [json.loads(line)["text"] for line in out.read_text().splitlines()][0] == "I wake up at 6:45 on weekdays"
    with MemoryStore(tmp_path / "other.sqlite", embedder=None) as other:
        assert import_jsonl(other, out) == (3, 0)
        assert import_jsonl(other, out) == (0, 3)  # importing twice adds nothing
        assert sorted(other.list(), key=lambda m: m.id) == sorted(originals, key=lambda m: m.id)
        assert other.search("milk")[0].memory.id == originals[1].id  # indexed on the way in
    only_prefs = tmp_path / "prefs.jsonl"
    assert export_jsonl(mem, only_prefs, kinds=[MemoryKind.preference]) == 1


def test_a_bad_import_line_is_named_and_nothing_is_added(tmp_path, mem):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "fact", "text": "ok"}) + "\n" + json.dumps({"kind": "mood", "text": "x"}) + "\n")
    with pytest.raises(StoreError, match=r"bad.jsonl:2"):
        import_jsonl(mem, bad)
    assert mem.count() == 0


def test_writes_from_another_connection_are_seen(tmp_path, mem):
    _add(mem, "first memory about bicycles", "fact")
    assert mem.search("bicycles")
    generation = mem.generation()
    with MemoryStore(tmp_path / "memory.sqlite", embedder=None) as other:
        _add(other, "second memory about bicycles", "fact")
    assert mem.generation() > generation
    assert len(mem.search("bicycles")) == 2
    raw = sqlite3.connect(tmp_path / "memory.sqlite")  # the file is plain SQLite with an FTS5 table
    assert raw.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'bicycles'").fetchone() == (2,)
    raw.close()


def test_intents_fire_on_their_trigger_once_and_not_after_expiry(mem):
    now = utcnow()
    clock = _add(mem, "Check the weekend alarm", "intent", trigger=Trigger.parse("app:Clock"))
    past = _add(mem, "Call mum", "intent", trigger=Trigger.parse(f"time:{(now - timedelta(hours=1)).isoformat()}"))
    _add(mem, "Pay rent", "intent", trigger=Trigger.parse(f"time:{(now + timedelta(days=3)).isoformat()}"))
    _add(mem, "Renew passport", "intent", trigger=Trigger.parse("app:Clock"), expires_at=now - timedelta(minutes=1))
    office = _add(mem, "Print the slides", "intent", trigger=Trigger.parse("place:Office"))
    assert [m.id for m in due_intents(mem, now=now, goal="Send a message")] == [past.id]
    assert [m.id for m in due_intents(mem, now=now, goal="Set an alarm for 7:30")] == [clock.id, past.id]  # alarm → Clock
    assert [m.id for m in due_intents(mem, now=now, places=["office"])] == [past.id, office.id]
    text = episode_context(mem, "Set an alarm for 7:30", now=now)
    assert "Reminder: Check the weekend alarm (you asked to be reminded when opening Clock)" in text
    assert "Reminder: Call mum" in text and "Pay rent" not in text and "Renew passport" not in text
    assert "Reminder" not in episode_context(mem, "Set an alarm for 7:30", now=now)  # shown once
    assert mem.get(clock.id).fired_at is not None


def test_episode_context_keeps_to_its_budget_and_is_empty_when_nothing_applies(mem):
    assert episode_context(mem, "Set an alarm") == ""
    for i in range(30):
        _add(mem, f"alarm preference number {i}: ring softly for {i} minutes")
    text = episode_context(mem, "Set an alarm", budget_chars=400)
    assert text.startswith("# What you know about the user\n- alarm preference") and len(text) <= 400
    assert episode_context(mem, "Call the plumber") == ""


def test_profiles_live_under_home_and_bad_names_are_refused(tmp_path):
    assert profile_path(tmp_path, "work") == tmp_path / "profiles" / "work" / "memory.sqlite"
    with pytest.raises(ConfigError, match="bad profile name"):
        profile_path(tmp_path, "../etc")
