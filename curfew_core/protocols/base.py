"""The one shape every wire protocol fills in (``protocols/<name>.py``).

A wire protocol is what a model provider's clients speak: OpenAI's, Anthropic's,
Gemini's. Everything the proxy must know of one is declared in its module, as a
:class:`WireProtocol`, and read from there by the modules that act on it: its
error shape (``edge.dialects`` builds the door's answers from it), where its
clients put a credential (the door table's reader, ``proxy.passing`` and
``edge.http_headers``), its upstream (``proxy.upstream``: settings, auth, the
answer headers relayed, the event that ends a broken stream), the names of its
reply budget and its usage (``proxy.usage``), where a team key's member is
named in a body (``edge.team_caller``) and its origins in the ledger
(``ledger.entry``). No module asks *which* protocol it holds: each reads the
declaration.

Standard library only (and the client's shapes, where a protocol's bodies are
built): this package sits below the ledger, the proxy and the edge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

#: ``(status, message, code, param, OpenAI's error type) -> error body``: every
#: error the proxy makes up in a protocol's name, so its SDK raises as usual.
ErrorBody = Callable[[int, str, str, "str | None", str], dict[str, Any]]
#: ``request headers -> the Curfew token`` (case-insensitive mapping).
TokenReader = Callable[[Mapping[str, str]], "str | None"]
#: A place in a JSON body: the keys from the top (``("metadata", "user_id")``).
Path = tuple[str, ...]

#: Where a caller that brings its own provider credential puts its Curfew
#: token, at every model door (``edge.http_headers`` explains it).
CURFEW_TOKEN_HEADER = "X-Curfew-Token"  # noqa: S105 - a header name
CURFEW_TOKEN_RAW = b"x-curfew-token"


def bearer_token(header: str) -> str | None:
    """The token in an ``Authorization: Bearer <token>`` header value, or None
    (another scheme, or nothing after it)."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def bearer_in(headers: Mapping[str, str]) -> str | None:
    """The bearer token in request headers (case-insensitive), or None."""
    return bearer_token(headers.get("Authorization", ""))


def curfew_token_in(headers: Mapping[str, str]) -> str | None:
    """The token in ``X-Curfew-Token``, or None (not sent, or blank)."""
    value: str = headers.get(CURFEW_TOKEN_HEADER, "") or ""
    return value.strip() or None


def query_value(query: bytes, names: frozenset[str]) -> str | None:
    """The first non-blank value of a parameter named in ``names`` in
    ``query`` (an ASGI ``query_string``, percent-decoded), or None."""
    if not names or not query:
        return None
    for name, value in parse_qsl(query.decode("latin-1")):
        if name in names and value.strip():
            return value.strip()
    return None


@dataclass(frozen=True, slots=True)
class Usage:
    """How a protocol's answers say what they used."""

    #: The object's key (``usage``, ``usageMetadata``).
    key: str
    #: Its input and output counts, by any of these names (the first found).
    input: tuple[str, ...]
    output: tuple[str, ...]
    #: Objects an event nests it in (``response`` for the Responses API's
    #: ``response.completed``, ``message`` for Anthropic's ``message_start``).
    within: tuple[str, ...] = ()
    #: ``b'"<key>"'``: what a stream's line must hold to be read at all.
    marker: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "marker", f'"{self.key}"'.encode())


@dataclass(frozen=True, slots=True)
class Refusals:
    """The words and codes of a door's own refusals (a 401, a 413, a 429,
    its outages): a model door's in the proxy's voice, in its protocol's
    terms (``edge.dialects`` has the API's)."""

    missing: str
    unknown: str = "unknown or revoked curfew API token"
    unauthorized_code: str = "invalid_api_key"
    too_large_code: str = "request_too_large"
    rate_limited_code: str = "rate_limit_exceeded"
    rate_limited_type: str = "requests"
    unavailable: str = "the curfew proxy cannot reach its storage; retry shortly"
    failed: str = "the curfew proxy failed; see its log"


@dataclass(frozen=True, slots=True)
class WireProtocol:
    """Everything the proxy knows of one wire protocol."""

    #: Its name (the door's dialect, logs, docs).
    name: str
    # -- errors --------------------------------------------------------------
    error_body: ErrorBody
    refusals: Refusals
    # -- credentials ---------------------------------------------------------
    #: Where its clients put the Curfew token (the door table's reader).
    token_in: TokenReader
    #: Request headers that carry a provider credential: never passed upstream
    #: with the operator's key; the caller's own when its Curfew token came in
    #: ``X-Curfew-Token`` (and the operator allows it).
    credential_headers: frozenset[bytes]
    #: What goes with a caller's own credential (OpenAI's organization and
    #: project), dropped with the operator's key.
    account_headers: frozenset[bytes] = frozenset()
    #: Query parameters that carry a credential (Gemini's ``key``): where its
    #: clients may put the Curfew token when no header holds one
    #: (:meth:`query_token`, the door table's query reader), and never forwarded.
    query_credentials: frozenset[str] = frozenset()
    # -- the upstream ----------------------------------------------------------
    #: The settings holding its base URL and the operator's key (read per request).
    base_url_setting: str = ""
    api_key_setting: str = ""
    #: The request headers carrying the operator's ``key``.
    auth: Callable[[str], dict[str, str]] = lambda key: {}
    #: The answer headers relayed (ids, rate limits), by exact lower-case name.
    relayed_headers: frozenset[str] = frozenset()
    #: The event that ends a stream the upstream broke off.
    broken: Callable[[dict[str, Any]], bytes] = lambda data: b""
    #: Request headers it requires, sent when the client sent none.
    defaults: tuple[tuple[str, str], ...] = ()
    # -- budget and usage ------------------------------------------------------
    #: Where a body names its reply budget (the ledger records the tightest).
    budgets: tuple[Path, ...] = ()
    usage: Usage = Usage("usage", (), ())
    # -- members and the ledger ------------------------------------------------
    #: Where a team key's body may name its member, and what that place is
    #: called (``user``, ``metadata``); the ``X-Curfew-User`` header always may.
    member_fields: tuple[tuple[Path, str], ...] = ()
    #: Its routes' names in the decision ledger (the ``origin`` column).
    origins: tuple[str, ...] = ()

    def error(
        self, status: int, message: str, code: str, param: str | None = None, type: str = ""
    ) -> dict[str, Any]:
        """An error body in this protocol's shape."""
        return self.error_body(status, message, code, param, type or "invalid_request_error")

    def query_token(self, query: bytes) -> str | None:
        """The Curfew token in a request's query (``query_credentials``), or
        None: read by the door only when no header holds one (``token_in``)."""
        return query_value(query, self.query_credentials)


def at(body: Mapping[str, Any], path: Path) -> Any:
    """The value at ``path`` in ``body``, or ``None`` (a key missing, or a step
    that is not an object)."""
    value: Any = body
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value
