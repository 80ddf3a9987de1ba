"""Throttle fixtures: a clock the test moves (tests/conftest.py clears the counts)."""

from __future__ import annotations

import time

import pytest


class FakeTime:
    """Stands in for the ``time`` module where the throttle and ``limits`` read
    the wall clock, so a window passes without waiting for it."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    import limits.storage.memory
    import limits.storage.redis
    import limits.strategies

    from curfew_core import throttle

    fake = FakeTime()
    for module in (limits.storage.memory, limits.storage.redis, limits.strategies, throttle):
        monkeypatch.setattr(module, "time", fake)
    return fake
