"""The client's brain without I/O: the verdict cache and the outage policies.

Both flavours (sync and async) do only the HTTP request themselves and hand
every outcome here, so caching, outage handling and logging behave the same.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from curfew_client.verdict import CurfewVerdict, policy_verdict

Policy = Literal["fail_open", "fail_closed", "last_known", "raise"]
POLICIES: tuple[Policy, ...] = ("fail_open", "fail_closed", "last_known", "raise")
#: (session_id, purpose, subagent, max_tokens): exempt sessions, purposes and
#: subagents get verdicts of their own, and ``max_tokens`` shapes the clamp.
Key = tuple[str | None, str | None, bool, int | None]

log = logging.getLogger("curfew.client")


class CurfewUnavailable(Exception):
    """The server could not be asked (only raised with ``policy="raise"``)."""


@dataclass(frozen=True, slots=True)
class Entry:
    verdict: CurfewVerdict
    #: Epoch seconds. Fresh until ``expires``; usable by ``last_known`` until
    #: ``fetched_at + last_known_limit``.
    fetched_at: float
    expires: float


class VerdictCache:
    """Verdicts by key until they expire, and what to answer when the server
    cannot be asked.

    A verdict is fresh until the earlier of its ``valid_until`` (the next
    scheduled change) and ``fetched_at + max_age`` (the server's advice for the
    unpredictable: saves and overrides). ``fetched_at`` is taken before the
    request is sent, so a slow answer can only shorten the freshness.

    During an outage the server is retried at most every ``retry_interval``
    seconds, so a dead server costs one timeout per interval, not one per call;
    the outage is logged once when it starts and once when it ends.
    """

    def __init__(
        self,
        *,
        server: str,
        policy: Policy,
        last_known_limit: float,
        last_known_fallback: Literal["fail_open", "fail_closed"],
        off_duty_reply: str,
        retry_interval: float,
        max_entries: int,
        clock: Callable[[], float],
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
        if last_known_fallback not in ("fail_open", "fail_closed"):
            raise ValueError(
                f"last_known_fallback must be fail_open or fail_closed, not {last_known_fallback!r}"
            )
        self.server = server
        self.policy = policy
        self.last_known_limit = float(last_known_limit)
        self.last_known_fallback = last_known_fallback
        self.off_duty_reply = off_duty_reply
        self.retry_interval = float(retry_interval)
        self.max_entries = max_entries
        self.clock = clock
        self.entries: dict[Key, Entry] = {}
        self._lock = threading.Lock()
        #: Epoch seconds the current outage began (``None``: the server answers).
        self.down_since: float | None = None
        self.retry_at = 0.0
        #: Calls answered by the policy during the current outage.
        self.fallbacks = 0

    # -- the hot path -----------------------------------------------------------

    def fresh(self, key: Key, now: float) -> CurfewVerdict | None:
        entry = self.entries.get(key)
        if entry is not None and now < entry.expires:
            return entry.verdict
        return None

    def backing_off(self, now: float) -> bool:
        """Whether to answer by policy without asking (a recent failure)."""
        return self.down_since is not None and now < self.retry_at

    # -- outcomes ---------------------------------------------------------------

    def store(self, key: Key, verdict: CurfewVerdict, fetched_at: float) -> None:
        until = verdict.valid_until.timestamp()
        if verdict.max_age is not None:
            until = min(until, fetched_at + verdict.max_age)
        with self._lock:
            if len(self.entries) >= self.max_entries and key not in self.entries:
                self._evict(fetched_at)
            self.entries[key] = Entry(verdict, fetched_at, until)
        if self.down_since is not None:
            self._recovered(fetched_at)

    def failed(self, key: Key, now: float, error: BaseException | str) -> CurfewVerdict:
        """The server could not be asked: log if the outage is new, then answer
        by policy (or raise ``CurfewUnavailable`` with ``policy="raise"``)."""
        why = error if isinstance(error, str) else _describe(error)
        with self._lock:
            began = self.down_since is None
            if began:
                self.down_since = now
                self.fallbacks = 0
            self.retry_at = now + self.retry_interval
        if began:
            log.warning(
                "curfew server %s unavailable (%s); answering by policy %s and retrying "
                "every %gs until it answers",
                self.server,
                why,
                self.policy,
                self.retry_interval,
            )
        return self.fallback(key, now, why)

    def fallback(self, key: Key, now: float, why: str = "retrying later") -> CurfewVerdict:
        """The policy's answer while the server is unavailable."""
        self.fallbacks += 1
        if self.policy == "raise":
            raise CurfewUnavailable(f"curfew server {self.server} unavailable: {why}")
        origin = self.policy
        if origin == "last_known":
            entry = self.entries.get(key)
            if entry is not None and now - entry.fetched_at <= self.last_known_limit:
                return entry.verdict.as_origin("last_known")
            origin = self.last_known_fallback
        return policy_verdict(origin, now=now, reply=self.off_duty_reply, why=why)

    # -- internals --------------------------------------------------------------

    def _recovered(self, now: float) -> None:
        with self._lock:
            since, self.down_since = self.down_since, None
            served, self.fallbacks = self.fallbacks, 0
        if since is not None:
            log.info(
                "curfew server %s answers again after %.1fs unavailable "
                "(%d call(s) answered by policy %s meanwhile)",
                self.server,
                max(0.0, now - since),
                served,
                self.policy,
            )

    def _evict(self, now: float) -> None:
        """Drop what no policy can use any more; if that is not enough, start over
        (a cold key costs one request)."""
        keep = self.last_known_limit if self.policy == "last_known" else 0.0
        for key, entry in list(self.entries.items()):
            if entry.expires <= now and now - entry.fetched_at > keep:
                del self.entries[key]
        if len(self.entries) >= self.max_entries:
            self.entries.clear()


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def cache_key(
    session_id: str | None, purpose: str | None, subagent: bool, max_tokens: int | None
) -> Key:
    """The key, with a budget the API cannot take treated as unknown (``None``)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        max_tokens = None
    return (session_id or None, purpose or None, bool(subagent), max_tokens)


def request_body(key: Key) -> dict[str, object]:
    session_id, purpose, subagent, max_tokens = key
    body: dict[str, object] = {"subagent": subagent}
    if session_id is not None:
        body["session_id"] = session_id
    if purpose is not None:
        body["purpose"] = purpose
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body
