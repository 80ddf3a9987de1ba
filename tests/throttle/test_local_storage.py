"""The in-process throttle storage (no Redis) starts no thread per count.

limits' ``MemoryStorage`` re-arms a 10 ms ``threading.Timer`` at each count
after the last one ran: under steady load, a thread for nearly every request
on every token door. ``throttle.LocalStorage`` sweeps inline instead, at most
once a second, and reads still drop an expired count at once.
"""

from __future__ import annotations

import threading
import time

import pytest
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from curfew_core.throttle import LocalStorage


def _threads_started_by(storage: MemoryStorage, monkeypatch: pytest.MonkeyPatch) -> int:
    started: list[str] = []
    real = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        real(thread)

    limiter = SlidingWindowCounterRateLimiter(storage)
    item = RateLimitItemPerSecond(1000)
    monkeypatch.setattr(threading.Thread, "start", counted)
    for n in range(30):
        limiter.hit(item, f"token-{n % 3}")
        time.sleep(0.012)  # past limits' 10 ms timer each time
    monkeypatch.undo()
    return len(started)


def test_counting_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _threads_started_by(LocalStorage(), monkeypatch) == 0


def test_the_control_limits_own_storage_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the library's storage, counted the same way, starts threads."""
    assert _threads_started_by(MemoryStorage(), monkeypatch) > 10


def test_expired_counts_are_swept_and_never_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = LocalStorage()
    monkeypatch.setattr(LocalStorage, "SWEEP_EVERY", 0.0)
    storage.incr("a", expiry=0.05)
    assert storage.get("a") == 1
    time.sleep(0.06)
    assert storage.get("a") == 0  # a read drops it at once
    storage.incr("b", expiry=0.05)
    time.sleep(0.06)
    storage.incr("c", expiry=10)  # the next count sweeps what expired
    assert "b" not in storage.storage
    assert storage.get("c") == 1
