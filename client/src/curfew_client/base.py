"""The core both flavours share (as httpx's ``BaseClient``): configuration, the
verdict cache and the outage policy. ``CurfewClient`` and ``AsyncCurfewClient``
only send the request, each in its own kind of I/O."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, Literal, TypeVar

from curfew_client.policy import Key, Policy, VerdictCache, cache_key
from curfew_client.transport import (
    DEFAULT_LAST_KNOWN_LIMIT,
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_TIMEOUT,
    ask_headers,
    parse_response,
    verdict_url,
)
from curfew_client.verdict import CurfewVerdict

TransportT = TypeVar("TransportT")


class BaseCurfewClient(Generic[TransportT]):
    """Asks a curfew server for verdicts, caches them, and survives its outages.

    ``verdict()`` never raises by default: when the server is unreachable, slow
    (``timeout`` seconds) or answers nonsense, ``policy`` answers instead:
    ``fail_open`` passes untouched, ``fail_closed`` short-circuits with
    ``off_duty_reply``, ``last_known`` serves the last verdict for the same key
    up to ``last_known_limit`` seconds after it was fetched (then falls back to
    ``last_known_fallback``), and ``raise`` raises ``CurfewUnavailable``.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        policy: Policy = "fail_open",
        last_known_limit: float = DEFAULT_LAST_KNOWN_LIMIT,
        last_known_fallback: Literal["fail_open", "fail_closed"] = "fail_open",
        off_duty_reply: str = "。",
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        max_entries: int = 4096,
        clock: Callable[[], float] = time.time,
        transport: TransportT | None = None,
    ) -> None:
        self.url = verdict_url(base_url)
        self.cache = VerdictCache(
            server=self.url,
            policy=policy,
            last_known_limit=last_known_limit,
            last_known_fallback=last_known_fallback,
            off_duty_reply=off_duty_reply,
            retry_interval=retry_interval,
            max_entries=max_entries,
            clock=clock,
        )
        self._clock = clock
        self._headers = ask_headers(token)
        self._timeout = timeout
        self._transport = transport
        self._open()

    def _open(self) -> None:
        """Set up the flavour's HTTP client (called once, at the end of ``__init__``)."""

    def _ready(
        self,
        session_id: str | None,
        purpose: str | None,
        subagent: bool,
        max_tokens: int | None,
    ) -> tuple[Key, float, CurfewVerdict | None]:
        """The key, the time, and the answer when no request is needed: a fresh
        cached verdict, or the policy's while backing off after a failure."""
        key = cache_key(session_id, purpose, subagent, max_tokens)
        now = self._clock()
        cache = self.cache
        entry = cache.entries.get(key)
        if entry is not None and now < entry.expires:
            return key, now, entry.verdict
        if cache.backing_off(now):
            return key, now, cache.fallback(key, now)
        return key, now, None

    def _answered(self, key: Key, now: float, status: int, content: bytes) -> CurfewVerdict:
        """What the server said, cached; or the policy's answer if it was not a verdict."""
        try:
            verdict = parse_response(status, content)
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc)
        self.cache.store(key, verdict, now)
        return verdict
