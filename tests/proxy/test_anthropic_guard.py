"""The guard in front of Django at ``/v1/messages`` (see test_body_guard.py):
oversized and unauthenticated bodies are refused before they are read, in
Anthropic's error shape, and the token counts as ``x-api-key`` too. The
controls: the same large bodies with a live token are served.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from curfew_site.asgi import application
from curfew_testkit.fake_anthropic import REPLY_TEXT, FakeAnthropic
from tests.proxy.inprocess import SECRET
from tests.proxy.test_body_guard import PROXY_LIMIT, Exchange, MiB

pytestmark = pytest.mark.django_db(transaction=True)

BODY = b'{"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}'


async def call(
    path: str, chunks: list[bytes], *, headers: dict[str, str], length: int | None = None
) -> Exchange:
    raw_headers = [(b"host", b"testserver"), (b"content-type", b"application/json")]
    raw_headers += [(name.encode(), value.encode()) for name, value in headers.items()]
    if length is not None:
        raw_headers.append((b"content-length", str(length).encode()))
    else:
        raw_headers.append((b"transfer-encoding", b"chunked"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    exchange = Exchange(chunks)
    await application(scope, exchange.receive, exchange.send)
    return exchange


def _anthropic_error(exchange: Exchange, status: int, type: str) -> dict[str, Any]:
    assert exchange.status == status, exchange.body[:300]
    assert exchange.headers["content-type"].startswith("application/json")
    assert exchange.headers["x-curfew-state"] == "unknown"
    assert exchange.headers["x-curfew-action"] == "none"
    body: dict[str, Any] = exchange.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == type
    assert isinstance(body["error"]["message"], str)
    return body


@pytest.fixture
def live(anthropic_upstream: FakeAnthropic) -> Iterator[FakeAnthropic]:
    with override_settings(
        CURFEW_ANTHROPIC_UPSTREAM_BASE_URL=f"{anthropic_upstream.base_url}/anthropic",
        CURFEW_ANTHROPIC_UPSTREAM_API_KEY=SECRET,
    ):
        yield anthropic_upstream


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
async def test_a_declared_oversized_body_is_413_at_once(
    path: str, token: str, live: FakeAnthropic
) -> None:
    exchange = await call(
        path, [b"x" * MiB] * 4, headers={"x-api-key": token}, length=1_200_000_000
    )
    _anthropic_error(exchange, 413, "request_too_large")
    assert exchange.consumed == 0
    assert live.requests == []


@pytest.mark.parametrize(
    "headers",
    [{}, {"x-api-key": "cfw_not-a-real-token"}, {"Authorization": "Bearer cfw_not-a-real-token"}],
)
@pytest.mark.parametrize("declared", [True, False])
async def test_an_unauthenticated_large_body_is_401_unread(
    headers: dict[str, str], declared: bool, live: FakeAnthropic
) -> None:
    exchange = await call(
        "/v1/messages", [b"x" * MiB] * 50, headers=headers, length=50 * MiB if declared else None
    )
    _anthropic_error(exchange, 401, "authentication_error")
    assert exchange.consumed == 0
    assert live.requests == []


async def test_a_chunked_body_over_the_limit_is_cut_off_with_413(
    token: str, live: FakeAnthropic
) -> None:
    chunks = [b"x" * (4 * MiB)] * 40  # 160 MiB, no Content-Length
    exchange = await call("/v1/messages", chunks, headers={"x-api-key": token})
    _anthropic_error(exchange, 413, "request_too_large")
    assert exchange.consumed == PROXY_LIMIT // (4 * MiB) + 1
    assert live.requests == []


@pytest.mark.parametrize("scheme", ["x-api-key", "bearer"])
async def test_a_large_chunked_body_with_a_live_token_is_served(
    scheme: str, token: str, live: FakeAnthropic, closing: None
) -> None:
    padding = b" " * (3 * MiB)
    chunks = [BODY[:10], padding, BODY[10:]]
    headers = (
        {"x-api-key": token} if scheme == "x-api-key" else {"Authorization": f"Bearer {token}"}
    )
    exchange = await call("/v1/messages", chunks, headers=headers)
    assert exchange.status == 200, exchange.body[:300]
    assert REPLY_TEXT in exchange.body.decode()
    assert exchange.consumed == 3
    [sent] = live.message_requests
    assert sent.body == BODY[:10] + padding + BODY[10:]
    assert sent.headers["x-api-key"] == SECRET
