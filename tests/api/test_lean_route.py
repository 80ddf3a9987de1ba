"""The lean API route (issue 13, ``curfew_core/api/lean.py``): the verdict and
state routes answered beside Django, through the site's ASGI app.

The API suites run through both doors (``tests/api/lean_client.py``); here is
what only this route promises: it is the one answering, a warm verdict takes
no thread and no query, a cold one takes the views' sync path, the answer and
the headers that matter are Django's, and what it does not serve is Django's.
"""

from __future__ import annotations

from typing import Any

import pytest

from curfew_core.api import lean
from curfew_core.http_headers import API_POLICY
from curfew_testkit.asgi_scope import http_scope
from tests.api.lean_client import AsgiClient

pytestmark = pytest.mark.django_db

AT = {"at": "2026-09-29T23:30:00+08:00", "max_tokens": 4096, "session_id": "s"}
#: The security headers both doors send (Django's middleware's own values).
SECURITY = ("X-Content-Type-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy")


def _lean(api: Any) -> AsgiClient:
    return AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {api.token}"})


def _verdict(api: Any, body: dict[str, Any] | None = None, **extra: Any) -> Any:
    import json

    raw = json.dumps(AT if body is None else body).encode()
    return _lean(api).request("POST", "/api/v1/verdict", raw, "application/json", **extra)


class Hops:
    """Counts the route's trips to a thread (the sync path)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = lean._in_thread

        async def counted(function: Any, *args: Any) -> Any:
            self.calls.append(function.__name__)
            return await real(function, *args)

        monkeypatch.setattr(lean, "_in_thread", counted)


def test_the_lean_route_answers_the_hot_paths(api: Any) -> None:
    """Not Django: none of the browser middleware's headers, the API's policy."""
    for response in (_verdict(api), _lean(api).request("GET", "/api/v1/state")):
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == "application/json"
        assert response["Content-Security-Policy"] == API_POLICY
        assert "Content-Language" not in response
        assert "Vary" not in response


def test_other_api_routes_are_djangos(api: Any) -> None:
    """Control: the same client through the same app, a route lean does not serve."""
    response = _lean(api).request("GET", "/api/v1/schedule")
    assert response.status_code == 200
    assert "Content-Language" in response  # Django's locale middleware ran


def test_same_answer_and_security_headers_as_the_view(api: Any) -> None:
    django = api.post("/api/v1/verdict", AT)
    mine = _verdict(api)
    assert mine.status_code == django.status_code == 200
    assert mine.content == django.content
    for name in (*SECURITY, "X-Frame-Options"):
        assert mine[name] == django[name], name
    assert mine["Content-Length"] == str(len(mine.content))


def test_a_warm_verdict_takes_no_thread_and_no_query(
    api: Any, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    hops = Hops(monkeypatch)
    assert _verdict(api).status_code == 200  # cold: the token check and the rows read
    assert hops.calls == ["_sync_answer"]
    hops.calls.clear()
    with django_assert_num_queries(0):
        for _ in range(3):
            response = _verdict(api)
            assert response.status_code == 200
            assert response.json()["budget"] == 1824
    assert hops.calls == []


def test_a_warm_token_with_cold_rows_reads_them_in_a_thread(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.cache import cache

    from curfew_core.cache_policy import bundle_key

    assert _verdict(api).status_code == 200
    cache.delete(bundle_key(api.user.id))
    hops = Hops(monkeypatch)
    response = _verdict(api)
    assert response.status_code == 200
    assert hops.calls == ["bundle_for"]


def test_a_saved_change_is_seen_by_the_next_warm_verdict(api: Any) -> None:
    assert _verdict(api).json()["state"] == "winding"
    api.patch("/api/v1/schedule", {"enabled": False})
    assert _verdict(api).json()["state"] == "on-duty"


def test_a_disallowed_host_is_djangos_400(api: Any) -> None:
    response = _verdict(api)  # control: our host
    assert response.status_code == 200
    evil = AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {api.token}"})
    bad = evil.request("POST", "/api/v1/verdict", b"{}", "application/json", host=b"evil.example")
    assert bad.status_code == 400
    assert "Content-Language" in bad  # answered by Django's stack, as before


def test_wrong_method_is_the_apis_405(api: Any) -> None:
    response = _lean(api).request("GET", "/api/v1/verdict")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"] == "method_not_allowed"
    assert response["Content-Security-Policy"] == API_POLICY


def test_an_unexpected_error_is_the_apis_500_not_html(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("a bug")

    assert _verdict(api).status_code == 200  # warm
    monkeypatch.setattr(lean, "verdict_body", broken)
    response = _verdict(api)
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"


async def test_a_client_gone_before_its_body_is_answered_nothing() -> None:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def django(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("lean's route is not handed on")

    scope = http_scope("POST", "/api/v1/verdict", [(b"host", b"testserver")])
    await lean.LeanApi(django)(scope, receive, send)
    assert sent == []


async def test_the_async_pool_waits_for_a_connection_as_the_sync_one(settings: Any) -> None:
    """A full pool is load, not an outage: a warm verdict waits for a Redis
    connection as long as the sync cache would (``CACHES`` OPTIONS), never
    just the socket deadline (the 200-client load test got 503s with 2 s)."""
    from curfew_core import async_cache

    settings.REDIS_URL = "redis://127.0.0.1:6379/15"
    settings.CACHES = {
        "default": {
            "BACKEND": "curfew_core.redis_cache.SharedRedisCache",
            "LOCATION": settings.REDIS_URL,
            "OPTIONS": {"max_connections": 37, "timeout": 9, "socket_timeout": 2},
        }
    }
    pool = async_cache.client().connection_pool
    try:
        assert (pool.max_connections, pool.timeout) == (37, 9)
        assert pool.connection_kwargs["socket_timeout"] == settings.REDIS_TIMEOUT
    finally:
        await async_cache.aclose()
