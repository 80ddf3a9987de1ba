"""The client's brain without I/O: the verdict cache and the outage policies.

Both flavours (sync and async) do only the HTTP request themselves and hand
every outcome here, so caching, outage handling and logging behave the same.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from curfew_client.health import (
    POLICIES,
    CurfewError,
    CurfewHealth,
    Policy,
    classify,
    policy_applied,
)
from curfew_client.verdict import CurfewVerdict, policy_verdict

#: (session_id, purpose, subagent, user): exempt sessions, purposes and
#: subagents get verdicts of their own, and so does each member a team key
#: asks for (``user``; ``None`` with a personal token). The budget is not in
#: the key: the server is asked without it, answers with the curve's ceiling,
#: and ``clamp`` takes the ``min`` here, so a thousand distinct ``max_tokens``
#: cost one request, not a thousand.
Key = tuple[str | None, str | None, bool, str | None]
#: Clamped copies remembered per entry (a gateway sends few distinct budgets;
#: past this many the memo starts over).
MAX_CLAMPS = 64
#: The longest any verdict is fresh, ``valid_until`` or not: the server looks
#: a day ahead (``engine.decide.HORIZON``), so no verdict it writes names a later one.
MAX_FRESH = 24 * 3600.0

log = logging.getLogger("curfew.client")


class CurfewUnavailable(Exception):
    """The server could not be asked (only raised with ``policy="raise"``);
    ``error`` says why (``None`` if no request failed yet)."""

    def __init__(self, message: str, error: CurfewError | None = None) -> None:
        super().__init__(message)
        self.error = error


class CurfewRefused(Exception):
    """The server refused this call's own request: a team key's name that is
    not a member of its team (404), a name it cannot read or none at all
    (400), a ``user`` a personal token may not send (422). Not an outage:
    the server answered, nothing is cached, no outage policy answers, and
    every other call is still asked for and enforced. Raised by ``verdict()``
    whatever the policy: the call it was made for gets this as its answer
    (a gateway answers its client with a 4xx naming the problem; the LiteLLM
    hook does).

    ``status`` is the server's HTTP status, ``code`` its error code
    (``not_found``, ``invalid_request``, ``unprocessable``), ``detail`` its
    message, ``user`` the member the call named (``None``: none)."""

    def __init__(self, status: int, code: str, detail: str, user: str | None) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.user = user
        super().__init__(
            f"curfew refused this call (HTTP {status}, {code}): {detail}. Only this call "
            "is refused; every other call is still checked"
        )


@dataclass(frozen=True, slots=True)
class Entry:
    verdict: CurfewVerdict
    #: Epoch seconds. Fresh until ``expires`` (``min(valid_until, fetched_at +
    #: max_age)``), or until ``valid_until`` while changes are pushed; usable by
    #: ``last_known`` until ``fetched_at + last_known_limit``.
    fetched_at: float
    expires: float
    valid_until: float
    #: ``verdict`` clamped to each budget asked for so far (identical answers
    #: for the same budget, and no copy per call).
    clamps: dict[int, CurfewVerdict] = field(default_factory=dict)

    def fresh(self, now: float, *, pushed: bool) -> bool:
        return now < (self.valid_until if pushed else self.expires)

    def clamped(self, max_tokens: int | None) -> CurfewVerdict:
        if max_tokens is None:
            return self.verdict
        hit = self.clamps.get(max_tokens)
        if hit is None:
            if len(self.clamps) >= MAX_CLAMPS:
                self.clamps.clear()
            hit = self.clamps[max_tokens] = clamp(self.verdict, max_tokens)
        return hit


class VerdictCache:
    """Verdicts by key until they expire, and what to answer when the server
    cannot be asked.

    A verdict is fresh until the earlier of its ``valid_until`` (the next
    scheduled change) and ``fetched_at + max_age`` (the server's advice for the
    unpredictable: saves and overrides). ``fetched_at`` is taken before the
    request is sent, so a slow answer can only shorten the freshness.

    During an outage the server is retried at most every ``retry_interval``
    seconds, so a dead server costs one timeout per interval, not one per call;
    the outage is logged once when it starts, at ERROR, saying what happened
    and what the policy does about it (again only when the failure changes
    kind), and once when it ends, at WARNING. ``last_error`` and ``health()``
    say the same to a gateway's health check.
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
        timeout: float | None = None,
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
        #: The request's timeout, only to say it when one ran out.
        self.timeout = timeout
        self.entries: dict[Key, Entry] = {}
        self._lock = threading.Lock()
        #: Whether a change stream is live (push mode): entries then stay fresh
        #: until ``valid_until``, since any change in between is pushed.
        self.pushed = False
        #: Bumped by every ``clear``: a verdict asked for before a change was
        #: pushed must not be cached after it (it may predate the change).
        self.generation = 0
        #: Epoch seconds the current outage began (``None``: the server answers).
        self.down_since: float | None = None
        self.retry_at = 0.0
        #: Calls answered by the policy during the current outage.
        self.fallbacks = 0
        #: Why the last request failed (``None``: it was answered, or none yet).
        self.last_error: CurfewError | None = None
        #: When the last verdict the server answered was asked for (epoch seconds).
        self.last_success: float | None = None
        #: The (kind, status) last logged at ERROR in this outage: the same
        #: failure again is not logged again until the server answers.
        self._logged: tuple[str, int | None] | None = None

    # -- the hot path -----------------------------------------------------------

    def fresh(self, key: Key, now: float) -> CurfewVerdict | None:
        entry = self.entries.get(key)
        if entry is not None and entry.fresh(now, pushed=self.pushed):
            return entry.verdict
        return None

    def backing_off(self, now: float) -> bool:
        """Whether to answer by policy without asking (a recent failure)."""
        return self.down_since is not None and now < self.retry_at

    # -- outcomes ---------------------------------------------------------------

    def store(
        self, key: Key, verdict: CurfewVerdict, fetched_at: float, generation: int | None = None
    ) -> Entry:
        """Cache ``verdict``, unless a change was pushed since it was asked for
        (``generation`` is the one it was asked in): then it is answered once,
        not kept."""
        # Never past the server's own horizon (a day): an answer claiming a
        # later one (garbage, or a man in the middle) is asked again tomorrow.
        valid_until = min(verdict.valid_until.timestamp(), fetched_at + MAX_FRESH)
        until = valid_until
        if verdict.max_age is not None:
            until = min(until, fetched_at + verdict.max_age)
        entry = Entry(verdict, fetched_at, until, valid_until)
        with self._lock:
            if generation is None or generation == self.generation:
                if len(self.entries) >= self.max_entries and key not in self.entries:
                    self._evict(fetched_at)
                self.entries[key] = entry
        self.last_success = fetched_at
        if self.down_since is not None:
            self._recovered(fetched_at)
        return entry

    def clear(self) -> None:
        """Forget every verdict (a change was pushed, or may have been missed)."""
        with self._lock:
            self.generation += 1
            self.entries.clear()

    def clear_user(self, user: str) -> None:
        """Forget one team member's verdicts (their own change was pushed).
        A fetch already under way for anyone is not stored (the generation
        moves), which costs at most one more request."""
        with self._lock:
            self.generation += 1
            for key in [key for key in self.entries if key[3] == user]:
                del self.entries[key]

    def refused(self, now: float) -> None:
        """The server refused one call's request (``CurfewRefused``): it
        answered, so an outage in progress is over; nothing is cached and the
        refusal is no outage of its own (no backoff, no policy for others)."""
        if self.down_since is not None:
            self._recovered(now)

    def set_pushed(self, pushed: bool) -> None:
        with self._lock:
            self.pushed = pushed

    def failed(
        self,
        key: Key,
        now: float,
        error: BaseException | str,
        *,
        status: int | None = None,
        content: bytes = b"",
    ) -> CurfewVerdict:
        """No verdict came (``status``: the server answered that, with
        ``content``; ``None``: no answer at all). Remember why in ``last_error``,
        log it at ERROR unless this failure was already said in this outage, then
        answer by policy (or raise ``CurfewUnavailable`` with ``policy="raise"``)."""
        try:
            kind, why = classify(error, status, content, timeout=self.timeout)
            applied = self._applied(key, now)
        except Exception:  # saying it must never be what breaks the hot path
            kind, why, applied = "bad_answer", f"failed ({type(error).__name__})", self.policy
        message = f"Curfew server {self.server} {why}"
        with self._lock:
            if self.down_since is None:
                self.down_since = now
                self.fallbacks = 0
            self.retry_at = now + self.retry_interval
            report = CurfewError(kind, status, message, applied, self.policy, now, self.down_since)
            self.last_error = report
            loud = self._logged != (kind, status)
            self._logged = (kind, status)
        if loud:
            log.error(
                "%s. Retrying every %gs; until it answers, the same failure is not "
                "logged again (its end is).",
                report,
                self.retry_interval,
            )
        else:
            log.debug("%s", report)
        return self.fallback(key, now, why)

    def fallback(self, key: Key, now: float, why: str = "retrying later") -> CurfewVerdict:
        """The policy's answer while the server is unavailable (the client then
        clamps it to the caller's budget, like every answer)."""
        self.fallbacks += 1
        if self.policy == "raise":
            raise CurfewUnavailable(
                f"curfew server {self.server} unavailable: {why}", self.last_error
            )
        origin = self.policy
        if origin == "last_known":
            entry = self.entries.get(key)
            if entry is not None and now - entry.fetched_at <= self.last_known_limit:
                return entry.verdict.as_origin("last_known")
            origin = self.last_known_fallback
        return policy_verdict(origin, now=now, reply=self.off_duty_reply, why=why)

    def health(self) -> CurfewHealth:
        """The state of things for a gateway's health check (see ``CurfewHealth``)."""
        with self._lock:
            error, down = self.last_error, self.down_since is not None
            return CurfewHealth(
                ok=error is None,
                last_error=error,
                last_success=self.last_success,
                serving_policy=down,
                policy_answered=self.fallbacks if down else 0,
                policy=self.policy,
            )

    # -- internals --------------------------------------------------------------

    def _applied(self, key: Key, now: float) -> str:
        """How the policy answers ``key`` now, in words."""
        known_at, known_for = None, 0.0
        if self.policy == "last_known":
            entry = self.entries.get(key)
            if entry is not None and now - entry.fetched_at <= self.last_known_limit:
                known_at = entry.fetched_at
                known_for = entry.fetched_at + self.last_known_limit - now
        return policy_applied(
            self.policy,
            fallback=self.last_known_fallback,
            known_at=known_at,
            known_for=known_for,
        )

    def _recovered(self, now: float) -> None:
        with self._lock:
            since, self.down_since = self.down_since, None
            served, self.fallbacks = self.fallbacks, 0
            error, self.last_error, self._logged = self.last_error, None, None
        if since is not None:
            log.warning(
                "Curfew server %s answers again after %.1fs (%d call(s) answered by "
                "policy %s meanwhile; the last failure: %s)",
                self.server,
                max(0.0, now - since),
                served,
                self.policy,
                _named(error),
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


def _named(error: CurfewError | None) -> str:
    if error is None:
        return "unknown"
    return error.kind if error.status is None else f"{error.kind}, HTTP {error.status}"


def cache_key(
    session_id: str | None, purpose: str | None, subagent: bool, user: str | None = None
) -> Key:
    return (session_id or None, purpose or None, bool(subagent), user or None)


def budget(max_tokens: object) -> int | None:
    """The caller's budget, or ``None`` (unknown) for one the API could not take."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return None
    return max_tokens


def clamp(verdict: CurfewVerdict, max_tokens: int | None) -> CurfewVerdict:
    """``verdict`` for a caller whose budget is ``max_tokens``: its clamp (and a
    dry run's would-be clamp) lowered to ``min(max_tokens, clamp)``, never
    raised; the server's own rule (``engine.decide``), applied here so the
    budget need not be sent. No clamp, or no budget: ``verdict`` itself."""
    if max_tokens is None:
        return verdict
    update: dict[str, object] = {}
    if verdict.max_tokens is not None and max_tokens < verdict.max_tokens:
        update["max_tokens"] = max_tokens
    would = verdict.would
    if would is not None and would.max_tokens is not None and max_tokens < would.max_tokens:
        update["would"] = would.model_copy(update={"max_tokens": max_tokens})
    if not update:
        return verdict
    return verdict.model_copy(update=update)  # the origin (private) is copied too


def request_body(key: Key) -> dict[str, object]:
    """What the server is asked: the scope, never the budget (see ``Key``)."""
    session_id, purpose, subagent, user = key
    body: dict[str, object] = {"subagent": subagent}
    if user is not None:
        body["user"] = user
    if session_id is not None:
        body["session_id"] = session_id
    if purpose is not None:
        body["purpose"] = purpose
    return body
