"""Bodies are refused before they are read (issue 9, item 7).

Driven at the ASGI level, as the server drives the app: the test hands over
the request head and counts how many body messages the app asks for. An
oversized or unauthenticated request must be answered having consumed none
(or, for a chunked body cut off at the limit, no more than the limit's worth),
in its door's own shape. The controls: the same requests with a live token and
a size under the limit reach the view and are served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from curfew_site.asgi import application
from curfew_testkit.asgi_scope import http_scope
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy import rawhttp
from tests.proxy.conftest import Proxy
from tests.proxy.inprocess import SECRET

pytestmark = pytest.mark.django_db(transaction=True)

MiB = 2**20
PROXY_LIMIT = 64 * MiB
CHAT = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'


class Exchange:
    """One request over ASGI: body messages handed out on demand, answers kept."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.consumed = 0
        self.messages: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if self.consumed < len(self.chunks):
            chunk = self.chunks[self.consumed]
            self.consumed += 1
            return {
                "type": "http.request",
                "body": chunk,
                "more_body": self.consumed < len(self.chunks),
            }
        # The client stays connected: a disconnect would come only if it left.
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        [start] = [m for m in self.messages if m["type"] == "http.response.start"]
        return int(start["status"])

    @property
    def headers(self) -> dict[str, str]:
        [start] = [m for m in self.messages if m["type"] == "http.response.start"]
        return {k.decode().lower(): v.decode() for k, v in start["headers"]}

    @property
    def body(self) -> bytes:
        bodies = [m for m in self.messages if m["type"] == "http.response.body"]
        return b"".join(m.get("body", b"") for m in bodies)

    def json(self) -> Any:
        import json

        return json.loads(self.body)


async def call(
    path: str,
    chunks: list[bytes],
    *,
    token: str | None = None,
    length: int | bytes | None = None,
    method: str = "POST",
) -> Exchange:
    headers = [(b"host", b"testserver"), (b"content-type", b"application/json")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if length is not None:
        raw_length = length if isinstance(length, bytes) else str(length).encode()
        headers.append((b"content-length", raw_length))
    elif method != "GET":
        headers.append((b"transfer-encoding", b"chunked"))
    scope = http_scope(method, path, headers)
    exchange = Exchange(chunks)
    await application(scope, exchange.receive, exchange.send)
    return exchange


def _proxy_error(exchange: Exchange, status: int) -> dict[str, Any]:
    assert exchange.status == status, exchange.body[:300]
    assert exchange.headers["content-type"].startswith("application/json")
    assert exchange.headers["x-curfew-state"] == "unknown"
    assert exchange.headers["x-curfew-action"] == "none"
    error: dict[str, Any] = exchange.json()["error"]
    assert isinstance(error["message"], str)
    return error


def _api_error(exchange: Exchange, status: int) -> dict[str, Any]:
    assert exchange.status == status, exchange.body[:300]
    body: dict[str, Any] = exchange.json()
    assert set(body) >= {"error", "message"}
    return body


@pytest.fixture
def live(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield upstream


# -- Content-Length over the limit: 413 before any byte is read ----------------------


async def test_a_declared_oversized_body_is_413_at_once_on_the_proxy(
    token: str, live: FakeUpstream
) -> None:
    exchange = await call(
        "/v1/chat/completions", [b"x" * MiB] * 4, token=token, length=1_200_000_000
    )
    error = _proxy_error(exchange, 413)
    assert error["code"] == "request_too_large"
    assert exchange.consumed == 0
    assert live.requests == []


async def test_a_declared_oversized_body_is_413_at_once_on_the_api(token: str) -> None:
    exchange = await call("/api/v1/verdict", [b"x" * MiB] * 4, token=token, length=10 * MiB)
    assert _api_error(exchange, 413)["error"] == "too_large"
    assert exchange.consumed == 0


# -- unauthenticated: 401 before the body is read --------------------------------------


@pytest.mark.parametrize("bad_token", [None, "cfw_not-a-real-token"])
@pytest.mark.parametrize("declared", [True, False])
async def test_an_unauthenticated_large_body_is_401_unread_on_the_proxy(
    bad_token: str | None, declared: bool, live: FakeUpstream
) -> None:
    chunks = [b"x" * MiB] * 50
    exchange = await call(
        "/v1/chat/completions", chunks, token=bad_token, length=50 * MiB if declared else None
    )
    error = _proxy_error(exchange, 401)
    assert error["code"] == "invalid_api_key"
    assert exchange.headers["www-authenticate"].startswith("Bearer")
    assert exchange.consumed == 0
    assert live.requests == []


@pytest.mark.parametrize("bad_token", [None, "cfw_not-a-real-token"])
@pytest.mark.parametrize("declared", [True, False])
async def test_an_unauthenticated_large_body_is_401_unread_on_the_api(
    bad_token: str | None, declared: bool
) -> None:
    chunks = [b"x" * (512 * 1024)] * 4
    exchange = await call(
        "/api/v1/schedule",
        chunks,
        token=bad_token,
        length=2 * MiB if declared else None,
        method="PATCH",
    )
    assert _api_error(exchange, 401)["error"] == "unauthorized"
    assert exchange.consumed == 0


# -- a chunked body is cut off at the limit ---------------------------------------------


async def test_a_chunked_body_over_the_limit_is_cut_off_with_413_on_the_proxy(
    token: str, live: FakeUpstream
) -> None:
    chunks = [b"x" * (4 * MiB)] * 40  # 160 MiB, no Content-Length
    exchange = await call("/v1/chat/completions", chunks, token=token)
    assert _proxy_error(exchange, 413)["code"] == "request_too_large"
    assert exchange.consumed == PROXY_LIMIT // (4 * MiB) + 1  # read up to the limit, no further
    assert len([m for m in exchange.messages if m["type"] == "http.response.start"]) == 1
    assert live.requests == []


async def test_a_chunked_body_over_the_limit_is_cut_off_with_413_on_the_api(token: str) -> None:
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1 * MiB):
        exchange = await call(
            "/api/v1/schedule", [b"x" * (256 * 1024)] * 40, token=token, method="PATCH"
        )
    assert _api_error(exchange, 413)["error"] == "too_large"
    assert exchange.consumed == 5


# -- the controls: a live token and a body under the limit are served ------------------


async def test_a_large_chunked_body_under_the_limit_with_a_live_token_is_served(
    token: str, live: FakeUpstream
) -> None:
    padding = b" " * (3 * MiB)
    chunks = [CHAT[:10], padding, CHAT[10:]]
    exchange = await call("/v1/chat/completions", chunks, token=token)
    assert exchange.status == 200, exchange.body[:300]
    assert REPLY_TEXT in exchange.body.decode()
    assert exchange.consumed == 3
    [sent] = live.chat_requests
    assert sent.body == CHAT[:10] + padding + CHAT[10:]


async def test_a_large_declared_body_with_a_live_token_reaches_the_api(token: str) -> None:
    body = b'{"session_id": "s"' + b" " * (200 * 1024) + b"}"
    exchange = await call("/api/v1/verdict", [body], token=token, length=len(body))
    assert exchange.status == 200, exchange.body[:300]
    assert "state" in exchange.json()


async def test_the_token_is_looked_up_once_per_request_whatever_the_body(
    token: str, live: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the edge's routes the token is checked before the body is read, small
    body or large, and only then: one lookup per request, never two (the hot
    path does not pay twice). Every API route is the edge's (issue 43): the
    slower ones too, small body or large."""
    from curfew_core.edge import caller

    lookups: list[str | None] = []
    real = caller.resolve

    async def counted(raw: str | None, address: str, **kwargs: Any) -> Any:
        lookups.append(raw)
        return await real(raw, address, **kwargs)

    monkeypatch.setattr(caller, "resolve", counted)
    bad = await call("/v1/chat/completions", [CHAT], token="cfw_bad", length=len(CHAT))
    assert _proxy_error(bad, 401)["code"] == "invalid_api_key"
    assert bad.consumed == 0  # refused before its body was read
    verdict = await call("/api/v1/verdict", [b"{}"], token=token, length=2)
    assert verdict.status == 200
    state = await call("/api/v1/state", [b""], token=token, method="GET", length=None)
    assert state.status == 200
    large = await call("/api/v1/verdict", [b"{}" + b" " * MiB], token=token, length=MiB + 2)
    assert large.status == 200
    assert lookups == ["cfw_bad", token, token, token]
    lookups.clear()
    # The slower API routes: the same one lookup, before the body is read.
    await call("/api/v1/schedule", [b"{}"], token=token, method="PATCH", length=2)
    assert lookups == [token]
    await call(
        "/api/v1/schedule", [b"{}" + b" " * MiB], token=token, method="PATCH", length=MiB + 2
    )
    assert lookups == [token, token]


# -- an outage during the early check ---------------------------------------------------


async def test_storage_down_during_the_early_check_is_a_503_in_each_door_shape(
    token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    def down(*args: object, **kwargs: object) -> None:
        raise RedisConnectionError("connection refused")

    # The check asks the token selector: the edge's cold path reads the token
    # with its user's rows in one query (issue 40), on every token door.
    monkeypatch.setattr("curfew_core.selectors.tokens.identify_with_bundle", down)
    proxy = await call("/v1/chat/completions", [b"x" * MiB] * 8, token=token, length=8 * MiB)
    assert _proxy_error(proxy, 503)["code"] == "unavailable"
    assert int(proxy.headers["retry-after"]) > 0
    api = await call("/api/v1/schedule", [b"x" * MiB], token=token, length=MiB, method="PATCH")
    assert _api_error(api, 503)["error"] == "unavailable"
    assert int(api.headers["retry-after"]) > 0
    assert proxy.consumed == api.consumed == 0


# -- on a real socket: the answer comes while the body has not even been sent ----------


@pytest.mark.parametrize(
    ("path", "auth", "length", "status"),
    [
        ("/v1/chat/completions", True, 1_200_000_000, 413),
        ("/v1/chat/completions", False, 50 * MiB, 401),
        ("/api/v1/overrides", True, 1_200_000_000, 413),
        ("/api/v1/overrides", False, 2 * MiB, 401),
    ],
)
def test_the_served_app_answers_before_the_body_is_sent(
    proxy: Proxy, upstream: FakeUpstream, path: str, auth: bool, length: int, status: int
) -> None:
    """Only the head goes out; an app that waited for the body would never answer
    (the read times out and the test fails)."""
    headers = {"Content-Type": "application/json", "Content-Length": str(length)}
    if auth:
        headers["Authorization"] = f"Bearer {proxy.token}"
    response = rawhttp.request(
        proxy.app.base_url, "POST", path, headers=headers, body=b"{", send_body=False, timeout=15
    )
    assert response.status == status
    assert response.headers["connection"] == "close"
    body = response.json()
    assert "error" in body
    assert upstream.requests == []


# -- the pages: sessions, not tokens, so only the size limits ---------------------------


async def test_an_oversized_form_post_is_a_413_page_before_the_body_is_read() -> None:
    """Sign-in and the settings forms take Django's form limit (2.5 MB), enforced
    from the head, not after the body was spooled to disk."""
    declared = await call("/login/", [b"x" * MiB] * 4, length=4 * MiB)
    assert declared.status == 413
    assert declared.consumed == 0
    assert declared.headers["content-type"].startswith("text/html")
    assert "Request too large" in declared.body.decode()
    assert "/static/curfew/curfew.css" in declared.body.decode()
    chunked = await call("/schedule/", [b"x" * MiB] * 8, length=None)
    assert chunked.status == 413
    assert chunked.consumed <= 4, "cut off at the limit, not read to the end"


async def test_a_small_form_post_reaches_the_page_as_before() -> None:
    # The control: a normal sign-in form is answered by the page itself.
    small = await call("/login/", [b"username=ada&password=x"], length=23)
    assert small.status in (200, 403)  # the sign-in page (403: no CSRF cookie here)
    assert small.consumed == 1


async def test_a_content_length_of_superscript_two_is_a_400_not_a_500(token: str) -> None:
    """A raw 0xB2 byte is "²" in latin-1 ASGI headers: ``"²".isdigit()`` is true and
    ``int("²")`` raises, so the length is read as ASCII digits only. (uvicorn's
    parser refuses such a head itself; daphne, which tests/readme serves the app under too,
    passes it on.)"""
    exchange = await call("/v1/chat/completions", [CHAT], token=token, length=b"\xb2")
    assert exchange.status == 400, exchange.body[:300]
    assert "body" in exchange.json()["error"]["message"]
