"""The proxy through the edge, driven as the server drives the app
(``curfew_site.asgi``): no Django handler or middleware runs.

What the browser middleware did that still applies to an API answer is kept
(Host check, security headers, a policy for a JSON answer); what an API never
uses is gone (no session cookie, no ``Vary: Cookie``, no language); and a
warm short-circuit never leaves the event loop.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from curfew_core.edge.http_headers import API_POLICY
from curfew_site import asgi as site_asgi
from curfew_testkit.asgi_scope import http_scope
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.inprocess import SECRET
from tests.proxy.test_body_guard import Exchange, call

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


# ``token`` (tests/proxy/conftest.py): a user on duty, so calls are passed.


@pytest.fixture
def served(upstream: FakeUpstream, closing: None) -> Any:
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1", CURFEW_UPSTREAM_API_KEY=SECRET
    ):
        yield upstream


async def _chat(token: str, host: bytes = b"testserver") -> Exchange:
    if host == b"testserver":
        return await call("/v1/chat/completions", [CHAT], token=token, length=len(CHAT))
    exchange = Exchange([CHAT])
    scope = http_scope(
        "POST",
        "/v1/chat/completions",
        [
            (b"host", host),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", str(len(CHAT)).encode()),
        ],
    )
    await site_asgi.application(scope, exchange.receive, exchange.send)
    return exchange


async def test_a_passed_call_keeps_the_api_headers_and_none_of_the_browser_ones(
    served: FakeUpstream, token: str
) -> None:
    exchange = await _chat(token)
    assert exchange.status == 200, exchange.body[:300]
    assert exchange.headers["x-curfew-action"] == "pass"
    assert len(served.chat_requests) == 1
    headers = exchange.headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == API_POLICY
    # No session, CSRF, locale or messages middleware ran.
    assert "set-cookie" not in headers
    assert "content-language" not in headers
    assert "cookie" not in headers.get("vary", "").lower()


async def test_an_error_answer_carries_its_length_and_the_headers(token: str) -> None:
    exchange = await call("/v1/chat/completions", [b"{"], token=token, length=1)
    assert exchange.status == 400
    assert exchange.headers["content-length"] == str(len(exchange.body))
    assert exchange.headers["x-curfew-action"] == "none"
    assert exchange.headers["content-security-policy"] == API_POLICY


async def test_a_host_not_allowed_is_refused_before_the_view(
    served: FakeUpstream, token: str
) -> None:
    exchange = await _chat(token, host=b"evil.example")
    assert exchange.status == 400
    assert served.chat_requests == []


async def test_pages_still_walk_the_browser_middleware() -> None:
    """The control: outside ``/v1/`` nothing changed (the page's policy, not the API's)."""
    exchange = Exchange([b""])
    scope = http_scope("GET", "/healthz", [(b"host", b"testserver")])
    await site_asgi.application(scope, exchange.receive, exchange.send)
    assert exchange.status == 200
    assert exchange.headers["content-security-policy"] != API_POLICY


async def test_a_warm_short_circuit_takes_no_thread_and_no_query(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream
) -> None:
    """Off duty, a warm call is answered on the event loop: no hop to a thread,
    no database cursor, nothing upstream (control: the cold call does hop)."""
    from asgiref.sync import SyncToAsync
    from django.db.backends.base.base import BaseDatabaseWrapper

    from tests.proxy.inprocess import token_at

    raw = await sync_to_async(token_at)("warm-off", "10:00")
    hops = {"threads": 0, "queries": 0}
    hop = SyncToAsync.__call__
    cursor = BaseDatabaseWrapper.cursor

    async def counted_hop(inner: Any, *args: Any, **kwargs: Any) -> Any:
        hops["threads"] += 1
        return await hop(inner, *args, **kwargs)

    def counted_cursor(inner: Any) -> Any:
        hops["queries"] += 1
        return cursor(inner)

    monkeypatch.setattr(SyncToAsync, "__call__", counted_hop)
    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", counted_cursor)
    cold = await call("/v1/chat/completions", [CHAT], token=raw, length=len(CHAT))
    assert cold.status == 200
    assert hops["threads"] > 0  # the control: the cold call did hop
    hops.update(threads=0, queries=0)
    for _ in range(3):
        warm = await call("/v1/chat/completions", [CHAT], token=raw, length=len(CHAT))
        assert warm.status == 200
        assert warm.headers["x-curfew-action"] == "short-circuit"
    assert hops == {"threads": 0, "queries": 0}
    assert upstream.requests == []
