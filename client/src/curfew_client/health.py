"""What the client says when a verdict could not be had, and what a gateway's
own health check reads (``client.last_error``, ``client.health()``).

No I/O: ``classify`` names a failure from what the request raised or what the
server answered, ``policy_applied`` says in words what the outage policy does
about it. ``VerdictCache`` (``policy.py``) keeps the results.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Literal

import httpx

#: What a client does when the server cannot give a verdict (declared here,
#: beside the words for it, and used by ``policy``).
Policy = Literal["fail_open", "fail_closed", "last_known", "raise"]
POLICIES: tuple[Policy, ...] = ("fail_open", "fail_closed", "last_known", "raise")

#: What went wrong, classified:
#:
#: - ``http_error``: the server (or something in front of it) answered an HTTP
#:   error that is none of the kinds below, e.g. an HTML 500 page;
#: - ``unreachable``: no answer at all (connection refused, a host name that does
#:   not resolve, a timeout);
#: - ``refused_token``: 401/403, the token is unknown or revoked: a configuration
#:   error, not an outage of the server;
#: - ``rate_limited``: 429;
#: - ``unavailable``: 503 in Curfew's own JSON, the server's storage is down;
#: - ``bad_answer``: HTTP 200, but not a verdict.
ErrorKind = Literal[
    "http_error", "unreachable", "refused_token", "rate_limited", "unavailable", "bad_answer"
]

#: How much of the server's own error message (or an HTML page's title) is quoted.
QUOTE_LIMIT = 160
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class CurfewError:
    """Why the last request for a verdict failed (``client.last_error``).

    ``str(error)`` is the line that was logged.
    """

    kind: ErrorKind
    #: The HTTP status the server answered (``None``: no answer at all).
    status: int | None
    #: What happened, for a person: "Curfew server <url> answered HTTP 500 (not
    #: Curfew's JSON: an HTML error page)".
    message: str
    #: How the outage policy applied: "fail_open: calls pass UNCHECKED until the
    #: server answers — no curfew is enforced".
    applied: str
    policy: Policy
    #: Epoch seconds (the client's clock) of this failure.
    at: float
    #: Epoch seconds the failures began (the first of this run, maybe of another kind).
    since: float

    def __str__(self) -> str:
        return f"{self.message}. Policy {self.applied}"

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (times as epoch seconds)."""
        return {
            "kind": self.kind,
            "status": self.status,
            "message": self.message,
            "applied": self.applied,
            "policy": self.policy,
            "at": self.at,
            "since": self.since,
        }


@dataclass(frozen=True, slots=True)
class CurfewHealth:
    """The client's health, for a gateway's own health check (``client.health()``)."""

    #: The last request for a verdict was answered (also ``True`` before the first).
    ok: bool
    #: Why the last request failed (``None`` when it was answered).
    last_error: CurfewError | None
    #: Epoch seconds (the client's clock) of the last request the server
    #: answered with a verdict (``None``: none yet).
    last_success: float | None
    #: Whether calls are being answered by the policy now: while failing, a call
    #: without a fresh cached verdict gets the policy's answer, not the schedule's.
    serving_policy: bool
    #: Calls answered by the policy since the failures began (0 when ``ok``).
    policy_answered: int
    policy: Policy

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (times as epoch seconds), for a health endpoint's body."""
        return {
            "ok": self.ok,
            "last_error": None if self.last_error is None else self.last_error.as_dict(),
            "last_success": self.last_success,
            "serving_policy": self.serving_policy,
            "policy_answered": self.policy_answered,
            "policy": self.policy,
        }


def classify(
    error: BaseException | str, status: int | None, content: bytes, *, timeout: float | None
) -> tuple[ErrorKind, str]:
    """The kind of failure, and what happened as the rest of a sentence that
    starts "Curfew server <url> …". ``status`` is ``None`` when no answer came."""
    if isinstance(error, str):
        return "bad_answer", error
    if status is None:
        return "unreachable", _unreachable(error, timeout)
    quoted, note = _body(content, page="an HTML page" if status == 200 else "an HTML error page")
    if status == 200:
        return (
            "bad_answer",
            f"answered HTTP 200 but not with a verdict ({note or _describe(error)})",
        )
    said = f": {quoted}" if quoted else ""
    if status in (401, 403):
        return "refused_token", (
            f"refused the token (HTTP {status}{said}): the token is unknown or revoked. "
            "That is a configuration error, not an outage of the server: "
            "give this client a valid token"
        )
    if status == 429:
        return "rate_limited", f"rate limited this client (HTTP 429{said})"
    if status == 503 and quoted:
        return "unavailable", f"reports a storage outage (HTTP 503{said})"
    what = f"answered HTTP {status}{said}" if quoted else f"answered HTTP {status} ({note})"
    if status == 404:
        what += "; is the base URL right?"
    return "http_error", what


def _unreachable(error: BaseException, timeout: float | None) -> str:
    if isinstance(error, httpx.TimeoutException | TimeoutError):
        within = f" within {timeout:g} s" if timeout is not None else ""
        return f"is unreachable: no answer{within} ({_describe(error)})"
    text = str(error).lower()
    if "refused" in text:
        how = "connection refused"
    elif any(
        clue in text
        for clue in ("name or service", "nodename", "name resolution", "getaddrinfo", "no address")
    ):
        how = "its host name does not resolve"
    elif isinstance(error, httpx.TransportError | OSError):
        how = "the connection failed"
    else:
        how = "it could not be asked"
    return f"is unreachable: {how} ({_describe(error)})"


def _body(content: bytes, *, page: str) -> tuple[str, str]:
    """Curfew's JSON error quoted ("error: message"), or ``""`` and what the body was."""
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        quoted = f"{body['error']}: {body.get('message', '')}".rstrip(": ")
        return _cut(quoted), ""
    head = content[:4096].lstrip()
    if head.startswith(b"<") or b"<html" in head.lower():
        title = _TITLE.search(head)
        named = ""
        if title is not None:
            text = " ".join(title.group(1).decode("utf-8", "replace").split())
            named = f" titled {_cut(text)!r}" if text else ""
        return "", f"not Curfew's JSON: {page}{named}"
    if not content.strip():
        return "", "an empty body, not Curfew's JSON"
    if body is not None:
        return "", "JSON, but not Curfew's error shape"
    return "", f"not Curfew's JSON: {len(content)} bytes of something else"


def policy_applied(
    policy: Policy,
    *,
    fallback: Literal["fail_open", "fail_closed"],
    known_at: float | None,
    known_for: float,
) -> str:
    """How ``policy`` answers now. For ``last_known``: ``known_at`` is when the
    verdict it serves was fetched (``None``: there is none it may serve) and
    ``known_for`` how many seconds more it may be served."""
    if policy == "fail_open":
        return "fail_open: calls pass UNCHECKED until the server answers — no curfew is enforced"
    if policy == "fail_closed":
        return "fail_closed: calls are answered with the off-duty reply until the server answers"
    if policy == "raise":
        return "raise: verdict() raises CurfewUnavailable until the server answers"
    then = policy_applied(fallback, fallback=fallback, known_at=None, known_for=0.0)
    if known_at is None:
        return f"last_known: no verdict known for this scope that may still be served, so {then}"
    clock = time.strftime("%H:%M", time.localtime(known_at))
    return f"last_known: serving the verdict from {clock} for up to {known_for:.0f} s, then {then}"


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {_cut(text[0])}" if text else type(error).__name__


def _cut(text: str) -> str:
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"
