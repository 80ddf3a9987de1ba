"""The site's ASGI lifespan (``edge.lifespan``): a stop writes the process's
last batches and waits for them, within a bound. The served stop itself is
``tests/production/test_token_use_at_stop.py``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from curfew_core.edge import lifespan

STARTUP = {"type": "lifespan.startup"}
SHUTDOWN = {"type": "lifespan.shutdown"}


async def run(messages: list[dict[str, Any]]) -> list[str]:
    """The lifespan fed ``messages``, as a server would: what it answered."""
    inbox = list(messages)
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await lifespan.lifespan({"type": "lifespan"}, receive, send)
    return sent


def test_the_stop_writes_before_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    monkeypatch.setattr(
        lifespan, "write_what_is_noted", lambda: written.append(threading.current_thread().name)
    )
    sent = asyncio.run(run([STARTUP, SHUTDOWN]))
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert len(written) == 1
    assert written[0] != threading.main_thread().name  # off the event loop's thread


def test_a_write_that_hangs_holds_the_stop_no_longer_than_the_bound(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    released, ended = threading.Event(), threading.Event()

    def hangs() -> None:
        released.wait(30)
        ended.set()

    monkeypatch.setattr(lifespan, "write_what_is_noted", hangs)
    monkeypatch.setattr(lifespan, "STOP_WRITE_SECONDS", 0.2)
    try:
        sent = asyncio.run(run([STARTUP, SHUTDOWN]))
        # The loop's end did not wait for the write either (as it would for
        # a thread of its executor): the process can end.
        assert not ended.is_set()
    finally:
        released.set()
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert "did not finish in 0.2 s" in caplog.text
