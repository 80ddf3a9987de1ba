"""The proxy's own ASGI route (issue 13): Django's handler without the browser
middleware, driven as the server drives the app (``curfew_site.asgi``).

What the browser middleware did that still applies to an API answer is kept
(Host check, security headers, a policy for a JSON answer); what an API never
uses is gone (no session cookie, no ``Vary: Cookie``, no language); and a
request borrows a kept one-thread executor rather than starting threads.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from curfew_core.http_headers import API_POLICY
from curfew_core.proxy import asgi as proxy_asgi
from curfew_core.proxy import views
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


def _route() -> proxy_asgi.ProxyRoute:
    """The route the site mounts (behind ``BodyGuard``)."""
    route = site_asgi.application.application_mapping["http"].app
    while not isinstance(route, proxy_asgi.ProxyRoute):  # behind the lean API route
        route = route.app
    assert isinstance(route, proxy_asgi.ProxyRoute)
    return route


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


async def test_requests_borrow_one_kept_thread_instead_of_starting_threads(
    served: FakeUpstream, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    judged_on: list[int] = []
    judge = views._judge

    def recording(*args: Any, **kwargs: Any) -> views.Judged | None:
        judged_on.append(threading.get_ident())
        return judge(*args, **kwargs)

    monkeypatch.setattr(views, "judge", sync_to_async(recording))
    executors = _route().proxy.executors
    started = threading.Thread.start
    starts: list[str] = []

    def counting(self: threading.Thread) -> None:
        starts.append(self.name)
        started(self)

    await _chat(token)  # the first may make the executor
    monkeypatch.setattr(threading.Thread, "start", counting)
    for _ in range(3):
        exchange = await _chat(token)
        assert exchange.status == 200
    assert len(set(judged_on)) == 1, "every request's sync work ran on the one kept thread"
    assert judged_on[0] != threading.get_ident()
    # Neither an executor's worker nor asgiref's joining thread (other threads,
    # such as the in-memory rate limiter's expiry timer, are not the handler's).
    assert [n for n in starts if "curfew-proxy" in n or "Executor" in n or "(join)" in n] == []
    assert executors.idle() >= 1


def test_an_executor_beyond_the_kept_number_is_shut_down() -> None:
    executors = proxy_asgi.Executors(keep=1)
    first, second = executors.take(), executors.take()
    assert first is not second
    executors.give_back(first)
    executors.give_back(second)
    assert executors.idle() == 1
    assert executors.take() is first
    with pytest.raises(RuntimeError):
        second.submit(lambda: None)


async def test_request_signals_run_on_the_requests_thread_and_only_when_it_worked(
    served: FakeUpstream, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Django's handler sent ``request_started`` and ``request_finished`` through
    two trips to a thread per request; here they run on the request's kept
    thread (whose database connection they tidy), around its work, and a warm
    call, judged on the event loop, wakes no thread."""
    from django.core import signals

    seen: list[tuple[str, str]] = []

    def started(**kwargs: Any) -> None:
        seen.append(("started", threading.current_thread().name))

    def finished(**kwargs: Any) -> None:
        seen.append(("finished", threading.current_thread().name))

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        cold = await _chat(token)  # a cold token: judged in the thread
        assert cold.status == 200
        await sync_to_async(lambda: None)()  # the queued "finished" has run by now
        for _ in range(20):
            if len(seen) >= 2:
                break
            await asyncio.sleep(0.05)
        assert [event for event, _ in seen] == ["started", "finished"]
        assert all("curfew-proxy" in thread for _, thread in seen), seen
        seen.clear()
        warm = await _chat(token)
        assert warm.status == 200
        await asyncio.sleep(0.1)
        # Only the response's own close, inline on the event loop's thread
        # (whose handlers find nothing to tidy there): no thread was woken.
        assert seen == [("finished", threading.current_thread().name)]
        assert len(served.chat_requests) == 2  # control: both calls were passed
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
