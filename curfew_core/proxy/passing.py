"""What of a client's request reaches the upstream when the proxy forwards it.

Every request header but the few named here, and the query string. This is
the one declaration of that policy (docs/security.md, "The proxy's limits";
the answer's side is ``upstream.RELAYED_HEADERS``): on duty a request must
reach the upstream as the client sent it, so what an SDK or agent adds
(``idempotency-key`` so its retries stay idempotent upstream, ``openai-beta``,
``anthropic-beta``, Codex's ``session-id`` / ``originator`` / ``x-codex-*``,
Claude Code's ``?beta=true``) is passed on without the proxy knowing it.

Not passed on:

- hop-by-hop headers (RFC 9110 §7.6.1), and any header the client's
  ``Connection`` names: they are about the connection to the proxy;
- what the HTTP client makes anew for the upstream's connection: ``host``
  (the operator's upstream), ``content-length`` (a clamped body has another),
  ``accept-encoding`` (the proxy decodes the upstream's answer itself and
  relays it decoded, so only codings it can decode may be asked for) and
  ``expect`` (the proxy already holds the whole body);
- credentials: the client's are for Curfew (its token) or are cookies, and
  the upstream gets the operator's key instead, with the operator's
  organization and project (``openai-organization``, ``openai-project``);
- Curfew's own ``X-Curfew-*`` (the scope, read here).

A name written with ``_`` for ``-`` counts as the same name: servers that
read headers as CGI variables (WSGI, PHP) take ``x_api_key`` for
``x-api-key``.

The query string goes only as a query, after a path the operator's settings
fixed: a fragment is cut off and anything not allowed in a query is
percent-encoded, so no ``/``, ``..``, ``%2F`` or ``#`` in it can reach the
path or the host (``upstream._with_query`` checks the URL once more).

Both run on every forwarded call: sets looked up per header, no regular
expression per header, and nothing at all for a request without a query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from curfew_core import protocols

#: Hop-by-hop headers (RFC 9110 §7.6.1, with the old ``proxy-connection`` and
#: ``keep-alive``): the client's connection to the proxy, not its request.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
#: Made anew by the HTTP client for the upstream's connection.
REMADE = frozenset({b"host", b"content-length", b"accept-encoding", b"expect"})
#: Credentials and cookies (``api-key`` is Azure OpenAI's key header), every
#: header a wire protocol carries a credential in (``protocols``: Gemini's
#: ``x-goog-api-key``), and what picks the account a key acts for: the key is
#: the operator's, so the organization and project are too (the openai SDK
#: sends a user's own ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``, which the
#: operator's key is refused with, or worse, billed to another of the
#: operator's projects).
CREDENTIALS = frozenset(
    {b"authorization", b"proxy-authorization", b"x-api-key", b"api-key", b"cookie"}
).union(
    *(protocol.credential_headers for protocol in protocols.ALL),
    *(protocol.account_headers for protocol in protocols.ALL),
)
#: Every header name not passed on (lower case), and Curfew's own prefix.
NOT_PASSED = HOP_BY_HOP | REMADE | CREDENTIALS
OWN_PREFIX = b"x-curfew-"
#: What nearly every client's ``Connection`` says: it names no header to drop,
#: so the second look at the headers is skipped.
_PLAIN_CONNECTION = frozenset({b"keep-alive", b"close", b"Keep-Alive", b"Close"})


def _kept(name: bytes) -> bool:
    if name in NOT_PASSED or name.startswith(OWN_PREFIX):
        return False
    if b"_" in name:
        # Rare: only then is the name read as its ``-`` spelling too.
        dashed = name.replace(b"_", b"-")
        return dashed not in NOT_PASSED and not dashed.startswith(OWN_PREFIX)
    return True


def headers(raw: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """The request's headers to pass on, in order, repeats kept apart (an
    ASGI ``headers`` list: names lower case, values as sent)."""
    passed: list[tuple[str, str]] = []
    named: bytes | None = None
    for raw_name, raw_value in raw:
        name = bytes(raw_name).lower()
        if not _kept(name):
            if name == b"connection":
                value_bytes = bytes(raw_value)
                named = value_bytes if named is None else named + b"," + value_bytes
            continue
        try:
            # The HTTP client writes header text as UTF-8: a value that is not
            # UTF-8 could not arrive as the bytes sent, so it stays here.
            value = bytes(raw_value).decode()
        except UnicodeDecodeError:
            continue
        passed.append((name.decode("latin-1"), value))
    if named is not None and named not in _PLAIN_CONNECTION:
        # Headers the client's Connection names are hop-by-hop too.
        hop = {token.strip().lower() for token in named.decode("latin-1").split(",")}
        passed = [(name, value) for name, value in passed if name not in hop]
    return passed


#: A query as RFC 3986 allows it: unreserved, sub-delims, ``:@/?``, and
#: percent-escapes.
_VALID_QUERY = re.compile(rb"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*")
_QUERY_SAFE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?"
)
#: A percent-escape's digits, one byte each.
_HEX = frozenset(bytes([digit]) for digit in b"0123456789ABCDEFabcdef")


def query(raw: bytes, credentials: frozenset[str] = frozenset()) -> str:
    """``raw`` (an ASGI ``query_string``) as a query to send: as sent when it
    is a valid one (every client's), else with a fragment cut off (it is never
    part of a request) and each byte a query cannot hold percent-encoded
    (a ``%`` that starts no escape included). A parameter named in
    ``credentials`` (the protocol's ``query_credentials``: Gemini's ``key``)
    is left out: it carries the Curfew token."""
    if not raw:
        return ""
    raw = raw.partition(b"#")[0]
    if credentials:
        raw = _without_credentials(raw, credentials)
    if _VALID_QUERY.fullmatch(raw):
        return raw.decode("ascii")
    out: list[str] = []
    for index, byte in enumerate(raw):
        escape = byte == 0x25 and raw[index + 1 : index + 2] in _HEX
        if byte in _QUERY_SAFE or (escape and raw[index + 2 : index + 3] in _HEX):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def _without_credentials(raw: bytes, credentials: frozenset[str]) -> bytes:
    """``raw`` without the parameters named in ``credentials`` (by the name
    as sent or percent-decoded), the others as they were."""
    kept = [
        part
        for part in raw.split(b"&")
        if unquote_plus(part.partition(b"=")[0].decode("latin-1")) not in credentials
    ]
    return b"&".join(kept)
