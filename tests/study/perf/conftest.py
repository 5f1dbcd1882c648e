"""Fixtures of the perf tests."""

import pytest

from archstudy.study.training import allocator


@pytest.fixture
def malloc_settings(monkeypatch):
    """The command is an entry point: it sets glibc's malloc up as a study worker does. Recorded here instead
    of done, so this test process stays as it was (tests/study/training/test_allocator.py checks the real
    thing in fresh interpreters)."""
    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append(True) or True)
    return calls
