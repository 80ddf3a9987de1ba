"""The clock the client tests hand to a client: seconds, moved by the test."""

from __future__ import annotations


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
