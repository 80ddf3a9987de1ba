"""Talking to the upstream provider: one pooled client per event loop, and the
relay of its answer, chunk by chunk.

What differs between providers (the settings naming the upstream and its key,
how the key is sent, the answer headers relayed, the error shape, the event
that ends a broken stream) is the wire protocol's declaration
(``curfew_core.protocols``), passed in as ``protocol``.

Settings are read on every request, never captured at import or start-up: the
operator's upstream (and a test's ``override_settings``) is whatever is set when
the request is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import ssl
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

import aiohttp
import certifi
from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from multidict import CIMultiDict
from yarl import URL

from curfew_core import protocols
from curfew_core.protocols import openai
from curfew_core.protocols.base import WireProtocol

log = logging.getLogger("curfew.proxy")

#: Credentials as providers echo them: ``sk-…`` keys (whole, or cut short as
#: ``sk-abc...wxyz``) and anything after ``Bearer``.
_SECRETS = re.compile(rb"(?<![A-Za-z0-9])sk-[A-Za-z0-9._*~+/=-]{4,}|(?i:\bbearer)\s+[^\s\"',;]+")
REDACTED = b"[redacted]"
#: Connecting is quick or broken; the read timeout (between chunks) is the operator's.
CONNECT_TIMEOUT = 10.0
#: Seconds a client is told to wait when the connection pool is full.
BUSY_RETRY_AFTER = 2
#: Seconds an idle kept-alive upstream connection is kept for reuse.
KEEPALIVE_SECONDS = 5.0
#: The most of an upstream's error body read (and relayed): its message is a
#: few hundred bytes, and it is read whole before anything is relayed.
ERROR_BODY_MAX = 1 << 20


class Unanswered(NamedTuple):
    """How an upstream that did not answer is told: what was raised, the
    log's words, the status, message and code."""

    raised: type[BaseException] | tuple[type[BaseException], ...]
    logged: str
    status: int
    message: str
    code: str


#: The first that fits is told: a timeout is an ``OSError`` too (and aiohttp's
#: connect and read timeouts are ``TimeoutError``s).
UNANSWERED = (
    Unanswered(
        TimeoutError,
        "timed out",
        504,
        "the upstream provider did not answer in time",
        "upstream_timeout",
    ),
    Unanswered(
        (aiohttp.ClientError, OSError),
        "unreachable",
        502,
        "the upstream provider is unreachable",
        "upstream_unreachable",
    ),
)


class AnswerBrokenOff(Exception):
    """A relayed body (not an event stream) that cannot be completed: its
    200 head is sent, so it is broken off (the server aborts the connection)
    and never ended as if it were whole."""


class AnswerTooLarge(AnswerBrokenOff):
    """An upstream answer ran past ``CURFEW_UPSTREAM_MAX_ANSWER_BYTES``."""


def _answer_cap() -> int:
    return int(settings.CURFEW_UPSTREAM_MAX_ANSWER_BYTES)


def _too_large_message(cap: int, status: int | None = None) -> str:
    what = "answer" if status is None else f"error answer (HTTP {status})"
    return f"the upstream provider's {what} is larger than the {cap} bytes this proxy relays"


@dataclass(eq=False, slots=True)
class Pool:
    """One event loop's upstream client: an aiohttp session over a kept-alive
    connection pool, and the gate that bounds how many upstream calls are open
    at once (``CURFEW_UPSTREAM_MAX_CONNECTIONS``).

    Why aiohttp and not httpx: a passed call is mostly waiting on the
    upstream, and what the server spends on it was half httpx, httpcore and
    anyio; aiohttp's client (its parser in C) costs a fraction of that.

    The bound is the gate, not the connector's own limit: a call that waits
    for a free place longer than ``CURFEW_UPSTREAM_POOL_TIMEOUT`` is an
    overload (a quick 503), and aiohttp's connect timeout would not tell that
    wait from a slow connect (a 504). Every open call holds one connection,
    and an idle one is reused before another is opened, so the connections
    stay within the bound too."""

    size: int
    session: aiohttp.ClientSession
    gate: asyncio.Semaphore
    #: Closes the pool when the loop shuts down (see :func:`_kept`).
    keeper: asyncio.Task[None] | None = None

    @property
    def is_closed(self) -> bool:
        return self.session.closed

    @property
    def open_calls(self) -> int:
        """Upstream calls holding a place (an answer not yet ended)."""
        return self.size - self.gate._value

    async def aclose(self) -> None:
        if self.keeper is not None and self.keeper is not asyncio.current_task():
            self.keeper.cancel()
        await _bounded_close(self.session)


#: How long closing a pool may wait for its connections to close gracefully.
CLOSE_GRACE_SECONDS = 2.0


async def _bounded_close(session: aiohttp.ClientSession) -> None:
    """Close ``session`` gracefully, but never wait for ever: aiohttp's close
    waits until every connection's transport reports closed, and a transport
    with unsent bytes to a peer that stopped reading never does. A loop's
    end waits on the pool's keeper (``_kept``), so an unbounded close hung a
    test's teardown (and would hang a server's shutdown). Past the grace,
    what is left is aborted."""
    connector = session.connector
    try:
        await asyncio.wait_for(asyncio.shield(session.close()), CLOSE_GRACE_SECONDS)
    except TimeoutError:
        # aiohttp keeps its connections in private tables; abort their
        # transports (public asyncio API) so the sockets go now.
        held = [
            *(proto for conns in getattr(connector, "_conns", {}).values() for proto, _ in conns),
            *getattr(connector, "_acquired", ()),
        ]
        for proto in held:
            transport = getattr(proto, "transport", None)
            if transport is not None:
                transport.abort()


# A pool's connections belong to the loop that opened them, so there is one per
# running loop (one in a server process), made on first use (and made again if
# the operator's pool size is not the one it was made with).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pool] = weakref.WeakKeyDictionary()
#: Closing replaced pools: held until done, or the loop drops them.
_closing: set[asyncio.Task[None]] = set()


@functools.cache
def _tls() -> ssl.SSLContext:
    # The CA bundle httpx verified against (certifi's), not whatever the
    # system store holds: the same upstreams are trusted as before.
    return ssl.create_default_context(cafile=certifi.where())


def shared_client() -> Pool:
    """The pooled client for the running loop (created lazily, reused after)."""
    loop = asyncio.get_running_loop()
    size = int(settings.CURFEW_UPSTREAM_MAX_CONNECTIONS)
    made = _clients.get(loop)
    if made is None or made.size != size or made.is_closed:
        # No base URL, key or timeout here: those are read per request.
        pool = Pool(
            size,
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0,  # the gate bounds the calls (see Pool)
                    keepalive_timeout=KEEPALIVE_SECONDS,
                    ssl=_tls(),
                ),
                # Nothing an upstream sets is kept between calls of different clients.
                cookie_jar=aiohttp.DummyCookieJar(),
                # No proxy or .netrc from the environment: where a request
                # goes and what it carries come from the operator's settings.
                trust_env=False,
            ),
            asyncio.Semaphore(size),
        )
        pool.keeper = loop.create_task(_kept(loop, pool))
        _clients[loop] = pool
        if made is not None and not made.is_closed:
            _in_background(loop, made.aclose())
        return pool
    return made


async def _kept(loop: asyncio.AbstractEventLoop, pool: Pool) -> None:
    """Wait for the loop's end, then close ``pool`` gracefully: a server's
    loop (and a test's) ends by cancelling the tasks left, as ``asyncio.run``
    does, and this is the one hook it offers with no lifespan protocol. Its
    sockets are closed (not left to the process's exit), and it leaves the
    table, so the loop and the pool can be collected."""
    try:
        await loop.create_future()
    finally:
        if _clients.get(loop) is pool:
            del _clients[loop]
        await _bounded_close(pool.session)


def _in_background(loop: asyncio.AbstractEventLoop, closing: Coroutine[Any, Any, None]) -> None:
    task = loop.create_task(closing)
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def close_clients() -> None:
    """Close the running loop's client (tests and shutdown hooks)."""
    made = _clients.pop(asyncio.get_running_loop(), None)
    if made is not None:
        await made.aclose()


@functools.lru_cache(maxsize=64)
def _timeouts(timeout: float) -> aiohttp.ClientTimeout:
    """The read timeout is the operator's (between chunks, and for the head);
    connecting gets at most :data:`CONNECT_TIMEOUT`; no bound on the whole
    answer's time (a long stream is fine while it flows), only on its size
    (``CURFEW_UPSTREAM_MAX_ANSWER_BYTES``). Made once per value."""
    return aiohttp.ClientTimeout(
        total=None, connect=None, sock_connect=min(timeout, CONNECT_TIMEOUT), sock_read=timeout
    )


#: The proxy asks the upstream only for the paths its protocols declare
#: (``protocols``), under its base URL. Client input is never a path: at most
#: a model id, as one checked segment.
#: A model id is an opaque name ("gpt-4o", "ft:gpt-4o-mini:org::id",
#: "qwen2.5-coder:7b"): letters and digits first, then a few punctuation marks.
#: No ``/`` or ``\``, no ``%`` (so nothing decodes into a separator later), no
#: ``.``/``..`` segment, no control characters or spaces, bounded.
MODEL_ID_MAX = 256
#: OpenAI's paths that take a checked segment (a model, a stored response).
MODELS = openai.MODELS
RESPONSES = openai.RESPONSES
OPENAI = openai.OPENAI
_SEGMENT = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:@+~-]{{0,{MODEL_ID_MAX - 1}}}")


class UnsafePath(ValueError):
    """A would-be path segment that could change where the request goes."""


def model_path(model: str) -> tuple[str, ...]:
    """``models/<model>``, or :class:`UnsafePath` when ``model`` is not a plain id."""
    if not _SEGMENT.fullmatch(model):
        raise UnsafePath(
            f"model must be a model id of at most {MODEL_ID_MAX} characters: letters, digits "
            "and . _ : @ + ~ - (starting with a letter or digit)"
        )
    return (*MODELS, model)


def base_url(protocol: WireProtocol) -> str:
    """The operator's upstream for ``protocol`` (read per request)."""
    return str(getattr(settings, protocol.base_url_setting))


def api_key(protocol: WireProtocol) -> str:
    """The operator's key for ``protocol`` (read per request; empty: none)."""
    return str(getattr(settings, protocol.api_key_setting, "") or "")


def upstream_url(segments: tuple[str, ...], protocol: WireProtocol = OPENAI) -> str:
    """The base URL's path plus ``segments``, each checked and encoded as exactly
    one segment; the result is checked again, so no input can leave the base."""
    return str(_checked_url(base_url(protocol), segments))


@functools.lru_cache(maxsize=1024)
def _checked_url(base_url: str, segments: tuple[str, ...]) -> URL:
    """:func:`upstream_url`, parsed, remembered per base URL (read per request,
    so a changed setting is a new entry) and path: the same fixed paths, and a
    few model or response ids, come again on every call (the checks and two URL
    parses cost more than a cheap view's whole answer)."""
    base = base_url.rstrip("/")
    base_path = urlsplit(base).path
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            raise UnsafePath(f"not a path segment: {segment!r}")
    tail = "/".join(quote(segment, safe=":@+~") for segment in segments)
    url = f"{base}/{tail}"
    parsed = URL(url)
    if parsed.raw_path != f"{base_path}/{tail}" or parsed.raw_query_string:
        raise UnsafePath(f"the upstream URL would not be {base_path}/{tail}")
    return parsed


def _where(url: str) -> str:
    """Scheme, host and path for logs: never a query or userinfo."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"


def _upstream_headers(
    content: bytes | None,
    protocol: WireProtocol,
    passed: Iterable[tuple[str, str]],
    operator_key: bool = True,
) -> CIMultiDict[str]:
    """The client's headers as ``passing`` let them through (no credentials
    among them), the protocol's defaults where the client sent none, and the
    operator's key (unless the caller's own credential is among ``passed``:
    ``operator_key`` false)."""
    headers: CIMultiDict[str] = CIMultiDict(passed)
    headers.setdefault("Accept", "application/json, text/event-stream")
    if content is not None:
        headers.setdefault("Content-Type", "application/json")
    for name, value in protocol.defaults:
        headers.setdefault(name, value)
    key = api_key(protocol) if operator_key else ""
    if key:
        headers.update(protocol.auth(key))
    return headers


#: The longest query remembered (``_with_query``): the usual ones are a few
#: words, and a client's very long one must not fill the memory.
REMEMBERED_QUERY = 256


def _with_query(target: URL, query: str) -> URL:
    """``target`` (a checked upstream URL) with ``query`` (``passing.query``'s:
    only characters a query may hold, no ``#``) as its query, and nothing
    else changed: checked, as ``_checked_url`` checks the path. A short query
    is remembered: a client sends the same one on every call (Claude Code's
    ``beta=true``)."""
    if len(query) <= REMEMBERED_QUERY:
        return _remembered_with_query(target, query)
    return _appended(target, query)


def _appended(target: URL, query: str) -> URL:
    url = URL(f"{target}?{query}", encoded=True)
    if (url.scheme, url.raw_host, url.port, url.raw_path, url.raw_query_string) != (
        target.scheme,
        target.raw_host,
        target.port,
        target.raw_path,
        query,
    ):
        raise UnsafePath(f"the query would change the upstream URL {target.raw_path}")
    return url


_remembered_with_query = functools.lru_cache(maxsize=256)(_appended)


def _scrub(content: bytes) -> bytes:
    """``content`` with the upstream keys and anything credential-shaped cut out."""
    for protocol in protocols.ALL:
        # Every operator key, whichever provider answered: none may reach a client.
        key = api_key(protocol)
        if key:
            content = content.replace(key.encode(), REDACTED)

    def redact(match: re.Match[bytes]) -> bytes:
        found = match.group(0)
        return b"Bearer " + REDACTED if found[:6].lower() == b"bearer" else REDACTED

    return _SECRETS.sub(redact, content)


#: One complete server-sent event, up to and including the blank line that ends it.
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n|\r\r)", re.S)
#: An event that carries an error: Anthropic's ``event: error``, the Responses
#: API's ``response.failed``, or a chat chunk ``{"error": ...}``.
_ERROR_EVENT = re.compile(
    rb"^(?:event:[ \t]*(?:error|response\.failed)\b"
    rb'|data:[ \t]*\{\s*"(?:error"\s*:|type"\s*:\s*"(?:error|response\.failed)"))',
    re.M,
)
#: Bytes of a partial event held back at most; past it they go on (keys still cut).
_HELD_MAX = 1 << 20
_SEPARATORS = (b"\r\n\r\n", b"\n\n", b"\r\r")


def _events_end(data: bytes) -> int:
    """Where the last complete event of ``data`` ends (0: none), as
    ``_EVENT`` splits events from the left. ``_EVENT.finditer`` alone is
    quadratic in the bytes after the last event (each start position scans
    to the end and fails): a 160 kB partial event took minutes of the event
    loop. So the last separator is found from the right first (linear), and
    the events are matched only up to it."""
    cut = 0
    for separator in _SEPARATORS:
        at = data.rfind(separator)
        if at >= 0:
            cut = max(cut, at + len(separator))
    if cut == 0:
        return 0
    return max((m.end() for m in _EVENT.finditer(data, 0, cut)), default=0)


class _StreamScrub:
    """What a relayed stream may not carry, cut as it flows (issue 23).

    A streamed answer was relayed byte for byte, so an upstream that put the
    operator's key, or an echo of its request headers, into an error event of
    a 200 stream handed it to the client: relayed errors lost their keys only
    when they came as a non-200 body. The operator's keys are cut from every
    stream; an error event (see ``_ERROR_EVENT``) also loses anything
    credential-shaped, as a relayed error body does. The model's own text is
    left alone: ``sk-…`` in an answer about API keys is the answer.

    A key must not escape by being split across two chunks: an event stream
    is cut at the end of its last complete event (each event goes on the
    moment it is whole, which is when a client can use it), other bodies hold
    back the last few bytes a key could start in.
    """

    def __init__(self, sse: bool) -> None:
        self.sse = sse
        self.keys = [key.encode() for protocol in protocols.ALL if (key := api_key(protocol))]
        self.keep = max((len(key) for key in self.keys), default=1) - 1
        self.held = b""
        #: Part of an event has gone on without its end (past ``_HELD_MAX``).
        self.mid_event = False

    def _cut_keys(self, data: bytes) -> bytes:
        for key in self.keys:
            data = data.replace(key, REDACTED)
        return data

    def _events(self, data: bytes) -> bytes:
        out = []
        for match in _EVENT.finditer(data):
            event = match.group(0)
            out.append(_scrub(event) if _ERROR_EVENT.search(event) else self._cut_keys(event))
        return b"".join(out)

    def feed(self, chunk: bytes) -> bytes:
        data = self.held + chunk
        if self.sse:
            end = _events_end(data)
            if end == 0 and len(data) > _HELD_MAX:
                self.held = b""
                self.mid_event = True
                return self._cut_keys(data)
            self.held = data[end:]
            if end:
                self.mid_event = False
            return self._events(data[:end])
        if not self.keys:
            return data
        data = self._cut_keys(data)
        cut = max(0, len(data) - self.keep)
        self.held = data[cut:]
        return data[:cut]

    def end(self) -> bytes:
        """What is held when the stream ends (a last event without its blank line)."""
        data, self.held = self.held, b""
        if self.sse and _ERROR_EVENT.search(data):
            return _scrub(data)
        return self._cut_keys(data)


def _relay_headers(
    response: HttpResponseBase, upstream: Mapping[str, str], allowed: frozenset[str]
) -> None:
    """Copy the allowed upstream headers; one whose value holds anything
    credential-shaped is dropped, not half-relayed."""
    for name, value in upstream.items():
        if name.lower() not in allowed:
            continue
        raw = value.encode("latin-1", "replace")
        if _scrub(raw) == raw:
            response[name] = value


def gateway_error(
    status: int,
    message: str,
    code: str,
    *,
    type: str = "upstream_error",
    protocol: WireProtocol = OPENAI,
) -> HttpResponse:
    """An error the proxy answers on the upstream's behalf, in its shape."""
    return HttpResponse(
        _json(protocol.error(status, message, code, type=type)),
        status=status,
        content_type="application/json",
    )


def _json(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


def _nothing() -> None:
    pass


async def forward(
    method: str,
    path: tuple[str, ...],
    content: bytes | None = None,
    *,
    release: Callable[[], None] = _nothing,
    protocol: WireProtocol = OPENAI,
    headers: Iterable[tuple[str, str]] = (),
    query: str = "",
    operator_key: bool = True,
) -> HttpResponseBase:
    """Send one request upstream and answer with what comes back.

    Success is streamed through as it arrives (SSE chunk by chunk, nothing
    buffered). An upstream error is relayed with its status and body; when the
    upstream refuses the proxy's own credentials (401/403) the body is replaced,
    because providers echo part of the key in that message and the key must
    never reach a client.

    ``release`` is called exactly once when the upstream call is over: at once
    for an error, when the relayed stream ends, fails, or is abandoned.

    ``protocol`` is the upstream's (OpenAI's unless told); ``headers``
    and ``query`` are the client's, as ``passing`` lets them through (never
    credentials; a query that cannot leave the query); ``operator_key`` false:
    the caller's own credential is among ``headers``, the operator's key is
    not added.
    """
    handed_off = False
    try:
        response = await _relayed(
            method, path, content, release, protocol, headers, query, operator_key
        )
        handed_off = isinstance(response, StreamingHttpResponse)
        return response
    finally:
        if not handed_off:
            release()


class _Open:
    """One upstream answer being read: its connection and its place in the
    pool, given back exactly once, on the loop (aiohttp's close is sync)."""

    __slots__ = ("done", "gate", "response")

    def __init__(self, response: aiohttp.ClientResponse, gate: asyncio.Semaphore) -> None:
        self.response = response
        self.gate = gate
        self.done = False

    def end(self, complete: bool = False) -> None:
        """``complete``: the whole body was read, so the connection is kept
        for the next call; otherwise it is closed (the upstream sees the hang-up
        and stops generating)."""
        if self.done:
            return
        self.done = True
        if complete:
            self.response.release()
        else:
            self.response.close()
        self.gate.release()


async def _relayed(
    method: str,
    path: tuple[str, ...],
    content: bytes | None,
    release: Callable[[], None],
    protocol: WireProtocol,
    passed: Iterable[tuple[str, str]],
    query: str,
    operator_key: bool,
) -> HttpResponseBase:
    target = _checked_url(base_url(protocol), path)
    if query:
        target = _with_query(target, query)
    pool = shared_client()
    gate = pool.gate
    if gate.locked():
        # Waiting for a place: a full pool is an overload, and a quick 503
        # lets the client back off instead of queueing for minutes.
        try:
            await asyncio.wait_for(gate.acquire(), float(settings.CURFEW_UPSTREAM_POOL_TIMEOUT))
        except TimeoutError:
            log.warning("upstream pool full: no free connection for %s", _where(str(target)))
            busy = gateway_error(
                503,
                "the curfew proxy is busy; retry shortly",
                "upstream_busy",
                type="server_error",
                protocol=protocol,
            )
            busy["Retry-After"] = str(BUSY_RETRY_AFTER)
            return busy
    else:
        await gate.acquire()  # free: returns at once
    try:
        response = await pool.session.request(
            method,
            target,
            data=content,
            headers=_upstream_headers(content, protocol, passed, operator_key),
            timeout=_timeouts(float(settings.CURFEW_UPSTREAM_TIMEOUT)),
            allow_redirects=False,
        )
    except BaseException as exc:
        gate.release()
        for way in UNANSWERED:
            if isinstance(exc, way.raised):
                log.warning(
                    "upstream %s %s (%s)", _where(str(target)), way.logged, type(exc).__name__
                )
                return gateway_error(way.status, way.message, way.code, protocol=protocol)
        raise
    call = _Open(response, gate)
    status = response.status
    cap = _answer_cap()
    if status >= 400:
        limit = min(cap, ERROR_BODY_MAX)
        complete = False
        body: bytes | None = None
        try:
            # An error body is read whole before anything is relayed: within
            # the read timeout in all, not per chunk (a trickle never ends).
            async with asyncio.timeout(float(settings.CURFEW_UPSTREAM_TIMEOUT)):
                body = await _read_at_most(response, limit)
            complete = body is not None
        except (aiohttp.ClientError, TimeoutError):
            body = b""
        finally:
            call.end(complete)
        if body is None:
            log.warning(
                "upstream %s answered %s with a body larger than %s bytes: not relayed",
                _where(str(target)),
                status,
                limit,
            )
            return gateway_error(
                502, _too_large_message(limit, status), "upstream_too_large", protocol=protocol
            )
        log.info("upstream %s answered %s", _where(str(target)), status)
        if status in (401, 403):
            message = (
                f"the upstream provider refused the proxy's own credentials "
                f"(HTTP {status}); the operator must check "
                f"{protocol.api_key_setting}"
            )
            body = _json(protocol.error(status, message, "upstream_auth", type="upstream_error"))
            content_type = "application/json"
        else:
            body = _scrub(body)
            content_type = response.headers.get("content-type", "")
            if not _json_error(body, content_type):
                # A provider's edge (nginx, a CDN) answers with its own page:
                # the client's SDK gets its error in the door's shape instead.
                kind = content_type.partition(";")[0].strip() or "no content type"
                message = (
                    f"the upstream provider answered HTTP {status} without a JSON error "
                    f"({kind}, {len(body)} bytes)"
                )
                body = _json(
                    protocol.error(status, message, "upstream_error", type="upstream_error")
                )
                content_type = "application/json"
        relayed = HttpResponse(body, status=status, content_type=content_type)
        _relay_headers(relayed, response.headers, protocol.relayed_headers)
        return relayed

    declared = response.content_length
    if declared is not None and declared > cap:
        call.end()
        log.warning(
            "upstream %s answered %s with a body larger than %s bytes (%s declared): not relayed",
            _where(str(target)),
            status,
            cap,
            declared,
        )
        return gateway_error(502, _too_large_message(cap), "upstream_too_large", protocol=protocol)
    try:
        content_type = response.headers.get("content-type", "application/json")
        streaming = StreamingHttpResponse(
            _relay(
                call,
                target,
                sse="text/event-stream" in content_type,
                release=release,
                protocol=protocol,
                cap=cap,
            ),
            status=status,
            content_type=content_type,
        )
        _until_done(streaming, call, release)
        _relay_headers(streaming, response.headers, protocol.relayed_headers)
    except BaseException:
        call.end()
        raise
    streaming["Cache-Control"] = "no-cache"
    # Reverse proxies (nginx) must not hold the stream back either.
    streaming["X-Accel-Buffering"] = "no"
    return streaming


def _json_error(body: bytes, content_type: str) -> bool:
    """Whether an upstream's error body is one its protocol's clients read:
    JSON by its content type, or by its first byte when it names none."""
    if not body.strip():
        return False
    if content_type:
        return "json" in content_type.lower()
    return body.lstrip()[:1] in (b"{", b"[")


async def _read_at_most(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The whole body, or ``None`` once it is past ``limit`` bytes (declared or
    read): an upstream's body is never read into memory without a bound."""
    declared = response.content_length
    if declared is not None and declared > limit:
        return None
    parts: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _until_done(streaming: StreamingHttpResponse, call: _Open, release: Callable[[], None]) -> None:
    """``release`` (and the upstream connection) when the relay is over, however
    it ends: the relay's own ``finally``, the server closing the response, or,
    for an answer the server dropped before relaying it (the client hung up
    first, so the relay never started and its ``finally`` never runs), the
    response being garbage-collected."""
    # Django calls these on close(); the stubs do not declare the list.
    streaming._resource_closers.append(release)  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()

    def abandoned() -> None:
        release()
        if call.done or loop.is_closed():
            return
        # On the loop, whichever thread collected the response. RuntimeError:
        # the loop closed meanwhile, and its connections with it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(call.end)

    # Whichever comes first: the server closing the response (the edge closes
    # every answer it ends, sent or not), or its collection.
    streaming._resource_closers.append(weakref.finalize(streaming, abandoned))  # type: ignore[attr-defined]


class _ClientStall:
    """A relay given up when its client takes nothing for ``seconds`` (issue
    41). A client that stops reading a stream without hanging up blocked the
    relay in the server's send for ever: memory stayed bounded (the socket
    buffers fill, then the upstream is read no further), but the upstream
    connection, its place in the pool and one of the token's upstream slots
    were held until the process stopped, and a graceful stop waited its full
    grace. Armed while a chunk is handed to the server, disarmed when it is
    taken; when it fires the upstream is hung up on and the request's task
    cancelled (the server closes the connection)."""

    __slots__ = ("call", "handle", "loop", "release", "seconds", "task", "url")

    def __init__(self, call: _Open, release: Callable[[], None], url: URL, seconds: float) -> None:
        self.call = call
        self.release = release
        self.url = url
        self.seconds = seconds
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.handle: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        self.handle = self.loop.call_later(self.seconds, self.fire)

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def fire(self) -> None:
        self.handle = None
        log.warning(
            "the client read nothing of %s's answer for %s s: relay given up",
            _where(str(self.url)),
            f"{self.seconds:g}",
        )
        self.release()
        self.call.end()
        if self.task is not None:
            self.task.cancel()


async def _relay(
    call: _Open,
    url: URL,
    *,
    sse: bool,
    release: Callable[[], None],
    protocol: WireProtocol,
    cap: int,
) -> AsyncIterator[bytes]:
    """The upstream body as it arrives; the upstream connection is released when
    the body ends, fails or the client goes away (the server cancels us).

    Past ``cap`` bytes the upstream is hung up on: an event stream ends with
    the door's own error event (a partial event is dropped, so the error
    stands alone), a JSON body is broken off (:class:`AnswerTooLarge`).

    A client that takes nothing for ``CURFEW_UPSTREAM_TIMEOUT`` seconds (the
    stall the upstream is allowed too) is given up (:class:`_ClientStall`)."""
    complete = False
    scrub = _StreamScrub(sse)
    size = 0
    stall = _ClientStall(call, release, url, float(settings.CURFEW_UPSTREAM_TIMEOUT))
    try:
        async for chunk in call.response.content.iter_any():
            size += len(chunk)
            if size > cap:
                log.warning(
                    "upstream %s answered a body larger than %s bytes: cut off (%s)",
                    _where(str(url)),
                    cap,
                    "error event sent" if sse else "connection aborted",
                )
                if not sse:
                    raise AnswerTooLarge(f"{_where(str(url))}: larger than {cap} bytes")
                for part in _error_end(
                    scrub, protocol, _too_large_message(cap), "upstream_too_large"
                ):
                    yield part
                return
            out = scrub.feed(chunk)
            if out:
                stall.arm()
                try:
                    yield out
                finally:
                    stall.disarm()
        complete = True
        last = scrub.end()
        if last:
            yield last
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("upstream %s broke off mid-answer (%s)", _where(str(url)), type(exc).__name__)
        if not sse:
            # What did arrive, then broken off here too: a truncated JSON
            # body ended cleanly reads as a whole one (or as bad JSON).
            last = scrub.end()
            if last:
                yield last
            raise AnswerBrokenOff(f"{_where(str(url))}: broken off upstream") from None
        for part in _error_end(
            scrub, protocol, "the upstream provider broke off the answer", "upstream_broken"
        ):
            yield part
    finally:
        stall.disarm()
        release()
        call.end(complete)


def _error_end(scrub: _StreamScrub, protocol: WireProtocol, message: str, code: str) -> list[bytes]:
    """What ends a relayed event stream the upstream failed (too large, broken
    off): the door's own 502 error event, on which SDKs raise instead of
    taking a cut-off answer for a complete one. The part of an event that did
    arrive is dropped, and one already under way is closed first: it would
    run into the error event (``data: {"choidata: {"error"…``), and the client
    would read one broken event instead of the error."""
    error = protocol.broken(protocol.error(502, message, code, type="upstream_error"))
    return [b"\n\n", error] if scrub.mid_event else [error]


# -- a stored response's path (the Responses API, issue 11) ---------------------
def response_path(response_id: str) -> tuple[str, ...]:
    """``responses/<id>``, or :class:`UnsafePath` when ``response_id`` is not
    one plain segment (OpenAI's ids are ``resp_`` and hex; the same rule as a
    model id keeps any separator, ``%`` or dot-segment out)."""
    if not _SEGMENT.fullmatch(response_id):
        raise UnsafePath(
            f"a response id must be at most {MODEL_ID_MAX} characters: letters, digits "
            "and . _ : @ + ~ - (starting with a letter or digit)"
        )
    return (*RESPONSES, response_id)
