"""What both flavours say to the server and how they read its answer."""

from __future__ import annotations

import json

from curfew_client.policy import CurfewRefused
from curfew_client.verdict import CurfewVerdict

#: Well under a second: the verdict sits in front of every model call.
DEFAULT_TIMEOUT = 0.5
#: A dead server is retried this often (one timeout per interval, not per call).
DEFAULT_RETRY_INTERVAL = 2.0
#: How old a verdict ``last_known`` may still serve.
DEFAULT_LAST_KNOWN_LIMIT = 3600.0
USER_AGENT = "curfew-client/1"


class BadAnswer(Exception):
    """The server answered, but not with a verdict (wrong token, bad input, a 5xx)."""


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
#: when the call named one: a 404 otherwise is a wrong base URL), a ``user``
#: a personal token may not send (422).
REFUSED_STATUSES = frozenset({400, 404, 422})


def refusal(status: int, content: bytes, user: str | None) -> CurfewRefused | None:
    """The server's refusal of this call alone, or ``None`` (a verdict, or a
    failure that is every call's: an outage, a refused token, a wrong URL)."""
    if status not in REFUSED_STATUSES or (status == 404 and user is None):
        return None
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
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
        except (ValueError, AttributeError):
            pass
        raise BadAnswer(f"HTTP {status}{message}")
    # Parsed and checked in one step by the declared model (``wire.VerdictAnswer``).
    return CurfewVerdict.model_validate_json(content)
