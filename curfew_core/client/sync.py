"""``CurfewClient``: the blocking flavour, for threaded gateways."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

import httpx

from curfew_core.client.policy import Policy, VerdictCache, cache_key, request_body
from curfew_core.client.transport import (
    DEFAULT_LAST_KNOWN_LIMIT,
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_TIMEOUT,
    ask_headers,
    parse_response,
    verdict_url,
)
from curfew_core.client.verdict import CurfewVerdict


class CurfewClient:
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
        transport: httpx.BaseTransport | None = None,
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
        self._http = httpx.Client(
            headers=ask_headers(token), timeout=httpx.Timeout(timeout), transport=transport
        )

    def verdict(
        self,
        *,
        session_id: str | None = None,
        purpose: str | None = None,
        subagent: bool = False,
        max_tokens: int | None = None,
    ) -> CurfewVerdict:
        """The verdict for the model call about to be made (cached while fresh)."""
        key = cache_key(session_id, purpose, subagent, max_tokens)
        now = self._clock()
        cache = self.cache
        entry = cache.entries.get(key)
        if entry is not None and now < entry.expires:
            return entry.verdict
        if cache.backing_off(now):
            return cache.fallback(key, now)
        try:
            response = self._http.post(self.url, json=request_body(key))
            verdict = parse_response(response.status_code, response.content)
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return cache.failed(key, now, exc)
        cache.store(key, verdict, now)
        return verdict

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CurfewClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
