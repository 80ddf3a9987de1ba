"""What both flavours say to the server and how they read its answer."""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterable, Callable, Iterable
from datetime import datetime

from curfew_client.policy import CurfewRefused
from curfew_client.verdict import CurfewVerdict

#: Well under a second: the verdict sits in front of every model call.
DEFAULT_TIMEOUT = 0.5
#: A dead server is retried this often (one timeout per interval, not per call).
DEFAULT_RETRY_INTERVAL = 2.0
#: How old a verdict ``last_known`` may still serve.
DEFAULT_LAST_KNOWN_LIMIT = 3600.0
USER_AGENT = "curfew-client/1"
#: The most an answer may weigh. A verdict is about a kilobyte (a canned reply
#: and its event stream a few); a larger one is not a verdict and is not read
#: to its end (a broken or hostile server must not grow a gateway's memory).
MAX_ANSWER = 256 * 1024
#: The largest clamp a verdict may carry (the server's own limit is a million;
#: past an int32 no upstream takes it). Below 1 is no clamp either.
MAX_CLAMP = 2**31 - 1
#: The instants a verdict may name, in epoch seconds (1970 to 3000): beyond
#: them, local time cannot even be computed (year 10000 overflows).
EARLIEST_INSTANT = 0.0
LATEST_INSTANT = 32_503_680_000.0


class BadAnswer(Exception):
    """The server answered, but not with a verdict (wrong token, bad input, a 5xx)."""


class AnswerTooLarge(BadAnswer):
    """The answer was longer than ``MAX_ANSWER``: dropped unread."""

    def __init__(self) -> None:
        super().__init__(f"an answer longer than {MAX_ANSWER} bytes")


class AnswerTooSlow(TimeoutError):
    """The answer's body kept coming past its deadline (a byte at a time)."""


def read_answer(
    chunks: Iterable[bytes],
    *,
    length: str | None,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """An answer's body, bounded: at most ``MAX_ANSWER`` bytes (a declared
    ``length`` past it is refused before reading) and no chunk read after
    ``deadline`` (``clock``'s seconds): each read is bounded by the client's
    timeout, and this bounds their sum, so a server trickling a byte at a time
    holds a call for at most one more read."""
    _declared(length)
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > MAX_ANSWER:
            raise AnswerTooLarge
        if clock() > deadline:
            raise AnswerTooSlow(f"the answer kept coming past the deadline ({len(body)} bytes)")
    return bytes(body)


async def aread_answer(chunks: AsyncIterable[bytes], *, length: str | None) -> bytes:
    """``read_answer`` for the async client (its deadline is the caller's
    ``asyncio.timeout``)."""
    _declared(length)
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > MAX_ANSWER:
            raise AnswerTooLarge
    return bytes(body)


def _declared(length: str | None) -> None:
    if length is not None and length.strip().isdigit() and int(length) > MAX_ANSWER:
        raise AnswerTooLarge


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    if not root.endswith("/api/v1"):
        root += "/api/v1"
    return root


def verdict_url(base_url: str) -> str:
    """``POST`` target from the server's root URL (``/api/v1`` may be included)."""
    return f"{_api_root(base_url)}/verdict"


def changes_url(base_url: str) -> str:
    """The change stream (push mode), from the same root URL."""
    return f"{_api_root(base_url)}/changes"


def decisions_url(base_url: str) -> str:
    """Where a gateway reports the decisions it made from its cache."""
    return f"{_api_root(base_url)}/decisions"


def ask_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT}


#: The statuses in which the server refuses one call's own request (with its
#: JSON error): a name it cannot read or none (400), not a member (404, only
#: when the call named one: a 404 otherwise is a wrong base URL), a body too
#: large (413: a verdict's body is a few bytes but the name the call gave, so
#: a member named in megabytes is that call's refusal, not everyone's outage),
#: a ``user`` a personal token may not send (422).
REFUSED_STATUSES = frozenset({400, 404, 413, 422})


def refusal(status: int, content: bytes, user: str | None) -> CurfewRefused | None:
    """The server's refusal of this call alone, or ``None`` (a verdict, or a
    failure that is every call's: an outage, a refused token, a wrong URL)."""
    if status not in REFUSED_STATUSES or (status == 404 and user is None):
        return None
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    code, message = body.get("error"), body.get("message")
    if not isinstance(code, str) or not isinstance(message, str):
        return None
    return CurfewRefused(status, code, message, user)


def parse_response(status: int, content: bytes) -> CurfewVerdict:
    if status != 200:
        message = ""
        try:
            body = json.loads(content)
            message = f": {body.get('error')}: {body.get('message')}"
        except (ValueError, AttributeError, RecursionError):
            pass
        raise BadAnswer(f"HTTP {status}{message}")
    # Parsed and checked in one step by the declared model (``wire.VerdictAnswer``).
    verdict = CurfewVerdict.model_validate_json(content)
    absurd = absurdity(verdict)
    if absurd is not None:
        raise BadAnswer(f"not a verdict: {absurd}")
    return verdict


def absurdity(verdict: CurfewVerdict) -> str | None:
    """What no Curfew server answers, though the wire's types allow it; ``None``
    when there is nothing. Such an answer is no verdict (the outage policy
    answers): a clamp below 1 or past ``MAX_CLAMP`` would be sent upstream as
    it is (``min`` of the caller's budget and garbage is garbage), an instant
    past year 3000 cannot be shown in local time, a ``progress`` outside 0..1
    (or NaN) is no point on the curve."""
    for name, clamp in (
        ("max_tokens", verdict.max_tokens),
        ("would.max_tokens", verdict.would.max_tokens if verdict.would is not None else None),
    ):
        if clamp is not None and not 1 <= clamp <= MAX_CLAMP:
            return f"{name} {_short(clamp)} is no clamp"
    if verdict.budget is not None and not 0 <= verdict.budget <= MAX_CLAMP:
        return f"budget {_short(verdict.budget)} is no budget"
    if verdict.progress is not None and not (
        math.isfinite(verdict.progress) and 0.0 <= verdict.progress <= 1.0
    ):
        return f"progress {verdict.progress!r} is not between 0 and 1"
    instants: tuple[tuple[str, datetime | None], ...] = (
        ("valid_until", verdict.valid_until),
        ("at", verdict.at),
        ("override_until", verdict.override_until),
        ("debug_at", verdict.debug_at),
    )
    for name, instant in instants:
        if instant is not None and not EARLIEST_INSTANT <= instant.timestamp() <= LATEST_INSTANT:
            return f"{name} {instant.isoformat()} is out of range"
    return None


def _short(number: int) -> str:
    text = str(number)
    return text if len(text) <= 20 else f"{text[:8]}…({len(text)} digits)"
