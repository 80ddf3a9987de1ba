"""The core both flavours share (as httpx's ``BaseClient``): configuration, the
verdict cache and the outage policy. ``CurfewClient`` and ``AsyncCurfewClient``
only send the request, each in its own kind of I/O."""

from __future__ import annotations

import atexit
import time
import weakref
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from curfew_client.health import CurfewError, CurfewHealth, Policy
from curfew_client.policy import Entry, Key, VerdictCache, budget, cache_key, clamp
from curfew_client.push import ChangeFeed
from curfew_client.reporting import (
    DEFAULT_BATCH,
    DEFAULT_INTERVAL,
    DEFAULT_QUEUE,
    DecisionLog,
)
from curfew_client.transport import (
    DEFAULT_LAST_KNOWN_LIMIT,
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_TIMEOUT,
    ask_headers,
    changes_url,
    decisions_url,
    parse_response,
    refusal,
    verdict_url,
)
from curfew_client.verdict import CurfewVerdict

TransportT = TypeVar("TransportT")
#: The server's team keys start so (a personal API token: ``cfw_``).
TEAM_KEY_PREFIX = "cft_"


class BaseCurfewClient(Generic[TransportT]):
    """Asks a curfew server for verdicts, caches them, and survives its outages.

    ``verdict()`` never raises by default: when the server is unreachable, slow
    (``timeout`` seconds) or answers nonsense, ``policy`` answers instead:
    ``fail_open`` passes untouched, ``fail_closed`` short-circuits with
    ``off_duty_reply``, ``last_known`` serves the last verdict for the same key
    up to ``last_known_limit`` seconds after it was fetched (then falls back to
    ``last_known_fallback``), and ``raise`` raises ``CurfewUnavailable``.

    A refusal of one call's own request is no outage: a team key's name that
    is not a member (404), a name the server cannot read or none (400), a
    ``user`` a personal token may not send (422) raise ``CurfewRefused`` for
    that call, whatever the policy, and touch nothing else: no outage state,
    no backoff, every other member still asked for and enforced.

    The server is asked once per scope (session, purpose, subagent) and, with
    a team key (a token that asks for any member of a team), per member
    (``verdict(user=...)``), never per budget: ``max_tokens`` is clamped here,
    ``min(max_tokens, the verdict's clamp)``, as the server would.

    ``push=True`` keeps one change stream open to the server
    (``GET /api/v1/changes``): every change (a save, an override) drops the
    cache at once, so cached verdicts stay fresh until ``valid_until`` and an
    override reaches this gateway within about a second, not ``max_age``.
    While the stream is down, freshness falls back to ``max_age`` and the
    stream is retried with backoff; on reconnect the cache is dropped once
    (a change may have been missed). ``close()`` stops it.

    Health: the first failure is logged at ERROR (logger ``curfew.client``)
    saying what happened and what the policy does about it; the same failure
    again is quiet until the server answers, which is logged once at WARNING.
    ``last_error`` (a ``CurfewError``, ``None`` once answered), ``healthy`` and
    ``health()`` (a ``CurfewHealth``) say the same to a gateway's health check.

    ``report_decisions=True`` (the default) reports each ``verdict()``
    answered from the cache to the server's decision ledger
    (``POST /api/v1/decisions``), in the background: at most every
    ``report_interval`` seconds or ``report_batch`` decisions, at most
    ``report_queue`` waiting (the oldest dropped and counted in
    ``reports.dropped``), retried with backoff, flushed by ``close()`` and at
    exit. A verdict the server was asked for is recorded by the server, so
    each decision is counted once (see ``curfew_client.reporting``).
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
        push: bool = False,
        report_decisions: bool = True,
        report_interval: float = DEFAULT_INTERVAL,
        report_batch: int = DEFAULT_BATCH,
        report_queue: int = DEFAULT_QUEUE,
    ) -> None:
        self.url = verdict_url(base_url)
        self.changes_url = changes_url(base_url)
        self.decisions_url = decisions_url(base_url)
        self.cache = VerdictCache(
            server=self.url,
            policy=policy,
            last_known_limit=last_known_limit,
            last_known_fallback=last_known_fallback,
            off_duty_reply=off_duty_reply,
            retry_interval=retry_interval,
            max_entries=max_entries,
            clock=clock,
            timeout=timeout,
        )
        self._clock = clock
        #: Whether ``token`` is a team key (``cft_``): it asks for a member
        #: each call names (``verdict(user=...)``; the LiteLLM hook maps its users).
        self.team_key = token.startswith(TEAM_KEY_PREFIX)
        self._headers = ask_headers(token)
        self._timeout = timeout
        self._transport = transport
        #: The change stream's state (``None`` without push mode).
        self.feed: ChangeFeed | None = ChangeFeed(self.cache, self.changes_url) if push else None
        #: The decisions waiting to be reported (``None`` with ``report_decisions=False``).
        self.reports: DecisionLog | None = (
            DecisionLog(
                interval=report_interval,
                batch=report_batch,
                limit=report_queue,
                clock=clock,
                nudge=self._nudge_reporter,
            )
            if report_decisions
            else None
        )
        self._open()

    def _flush_on_exit(self, finish: Callable[[Any], None]) -> None:
        """Run ``finish(self)`` at interpreter exit if this client is still
        alive then (a weak reference: the hook never keeps a dropped client
        alive); ``close`` unregisters ``self._at_exit``."""
        ref = weakref.ref(self)

        def at_exit() -> None:
            client = ref()
            if client is not None:
                finish(client)

        self._at_exit = at_exit
        atexit.register(at_exit)

    # -- health -----------------------------------------------------------------

    @property
    def last_error(self) -> CurfewError | None:
        """Why the last request for a verdict failed; ``None`` when it was
        answered (or none was made yet)."""
        return self.cache.last_error

    @property
    def healthy(self) -> bool:
        """Whether the last request for a verdict was answered (``True`` before the first)."""
        return self.cache.last_error is None

    def health(self) -> CurfewHealth:
        """For a gateway's health check: ``ok``, ``last_error``, ``last_success``,
        and whether calls are being answered by the policy (``serving_policy``)."""
        return self.cache.health()

    def _open(self) -> None:
        """Set up the flavour's HTTP client (called once, at the end of ``__init__``)."""

    def _nudge_reporter(self) -> None:
        """Start the flavour's reporter, or wake it for a full batch (rare: not
        once per call)."""

    def _ready(
        self,
        session_id: str | None,
        purpose: str | None,
        subagent: bool,
        max_tokens: int | None,
        user: str | None = None,
    ) -> tuple[Key, float, int, CurfewVerdict | None]:
        """The key, the time, the cache generation, and the answer when no
        request is needed: a fresh cached verdict, or the policy's while backing
        off after a failure (each clamped to ``max_tokens``). ``user``: the
        member a team key asks for (each member cached on their own)."""
        key = cache_key(session_id, purpose, subagent, user)
        now = self._clock()
        cache = self.cache
        generation = cache.generation
        entry = cache.entries.get(key)
        if entry is not None and entry.fresh(now, pushed=cache.pushed):
            asked = budget(max_tokens)
            verdict = entry.clamped(asked)
            reports = self.reports
            if reports is not None:
                # Answered without asking: the server never saw it. A team
                # member's is reported for the member (the report names them).
                reports.add(now, key, asked, verdict)
            return key, now, generation, verdict
        if cache.backing_off(now):
            return key, now, generation, for_budget(cache.fallback(key, now), max_tokens)
        return key, now, generation, None

    def _answered(
        self, key: Key, now: float, generation: int, status: int, content: bytes
    ) -> Answer:
        """What the server said, cached; or the policy's answer if it was not a
        verdict. Not yet clamped: callers sharing one request may differ in budget.
        Raises ``CurfewRefused`` when the server refused this call's own request
        (a name that is not a member): that call's answer, no outage."""
        refused = refusal(status, content, key[3])
        if refused is not None:
            self.cache.refused(now)
            raise refused
        try:
            verdict = parse_response(status, content)
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc, status=status, content=content)
        return self.cache.store(key, verdict, now, generation)


#: A cached entry (clamped through its memo) or a verdict not cached (the policy's).
Answer = Entry | CurfewVerdict


def for_budget(answer: Answer, max_tokens: int | None) -> CurfewVerdict:
    """``answer`` for a caller whose budget is ``max_tokens`` (``min``, never a raise)."""
    if isinstance(answer, Entry):
        return answer.clamped(budget(max_tokens))
    return clamp(answer, budget(max_tokens))
