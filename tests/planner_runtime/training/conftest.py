"""Fixtures for training tests: a store with real episodes on the virtual phone (a verified
success with a mistake it recovered from, and a verified failure), the embedded tokenizer."""

from __future__ import annotations

import pytest

from tests.planner_runtime.training.recorded import BAD, GOOD, record


@pytest.fixture
def episodes(device, device_ref, store):
    """(success, failure) trajectories of ``clock.set_alarm`` in ``store``."""
    runs = [record(store, device, device_ref, script) for script in (GOOD, BAD)]
    assert [r.verdict.success for r in runs] == [True, False]
    return runs


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from planner_runtime.planners.local.model_store import ensure_embedded_model

    return AutoTokenizer.from_pretrained(ensure_embedded_model())
