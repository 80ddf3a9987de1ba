"""The edge's one pipeline for token doors (``curfew_core/edge/app.py``).

What it promises beyond each door's own suite: it is the one answering (no
Django middleware ran), a warm call takes no thread and no query, a cold one
one hop to the shared pool (never a thread per request), a refusal comes
before the body is read, every failure is in the door's dialect, and what it
does not route is Django's.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from curfew_core.edge import app as edge_app
from curfew_core.edge import threads
from curfew_core.edge.app import Edge
from curfew_core.edge.declare import Door, Route, Table
from curfew_core.edge.dialects import API, OPENAI
from curfew_core.edge.doors import DOORS
from curfew_core.edge.http_headers import API_POLICY
from curfew_testkit.asgi_client import AsgiClient
from curfew_testkit.asgi_scope import http_scope

pytestmark = pytest.mark.django_db

AT = {"at": "2026-09-29T23:30:00+08:00", "max_tokens": 4096, "session_id": "s"}
SECURITY = ("X-Content-Type-Options", "X-Frame-Options", "Content-Security-Policy")
#: A page's headers, left out of an API answer (``http_headers.HTML_ONLY``).
PAGE_ONLY = ("Referrer-Policy", "Cross-Origin-Opener-Policy")


def _client(api: Any) -> AsgiClient:
    return AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {api.token}"})


def _verdict(api: Any, body: dict[str, Any] | None = None, **extra: Any) -> Any:
    raw = json.dumps(AT if body is None else body).encode()
    return _client(api).request("POST", "/api/v1/verdict", raw, "application/json", **extra)


class Hops:
    """Counts the edge's trips to a thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = threads.run_sync

        async def counted(function: Any, *args: Any) -> Any:
            self.calls.append(function.__name__)
            return await real(function, *args)

        from curfew_core.edge import caller

        monkeypatch.setattr(caller, "run_sync", counted)


def test_the_edge_answers_the_token_doors_without_djangos_middleware(api: Any) -> None:
    for response in (_verdict(api), _client(api).request("GET", "/api/v1/state")):
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == "application/json"
        assert response["Content-Security-Policy"] == API_POLICY
        assert response["Content-Length"] == str(len(response.content))
        for name in SECURITY:
            assert name in response, name
        for name in PAGE_ONLY:
            assert name not in response, name
        assert "Content-Language" not in response  # Django's locale middleware did not run
        assert "Vary" not in response


def test_pages_keep_every_security_header(api: Any) -> None:
    """Control: a page (Django's middleware) carries the page-only headers
    the edge's API answers leave out."""
    response = AsgiClient().request("GET", "/login/")
    assert response.status_code == 200
    for name in (*SECURITY, *PAGE_ONLY):
        assert name in response, name


def test_the_slower_api_routes_are_the_edges_too(api: Any) -> None:
    """Every API route is the edge's (issue 43): a settings read, answered on
    the edge's thread, with the edge's headers and none of Django's middleware."""
    response = _client(api).request("GET", "/api/v1/schedule")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == API_POLICY
    assert "Content-Language" not in response  # Django's locale middleware did not run


def test_a_warm_verdict_takes_no_thread_and_no_query(
    api: Any, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    hops = Hops(monkeypatch)
    assert _verdict(api).status_code == 200  # cold: the token check and the rows read
    assert hops.calls == ["_cold"]
    hops.calls.clear()
    with django_assert_num_queries(0):
        for _ in range(3):
            response = _verdict(api)
            assert response.status_code == 200
            assert response.json()["budget"] == 1824
    assert hops.calls == []


def test_a_warm_token_with_cold_rows_reads_them_in_one_hop(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.cache import cache

    from curfew_core.store.cache_policy import bundle_key

    assert _verdict(api).status_code == 200
    cache.delete(bundle_key(api.user.id))
    hops = Hops(monkeypatch)
    assert _verdict(api).status_code == 200
    assert hops.calls == ["bundle_from"]  # handed the rows the warm read found


@pytest.mark.django_db(transaction=True)
def test_a_saved_change_is_seen_by_the_next_warm_verdict(api: Any) -> None:
    assert _verdict(api).json()["state"] == "winding"
    api.patch("/api/v1/schedule", {"enabled": False})
    assert _verdict(api).json()["state"] == "on-duty"


def test_a_disallowed_host_is_refused_in_the_doors_dialect(api: Any) -> None:
    assert _verdict(api).status_code == 200  # control: our host
    bad = _client(api).request(
        "POST", "/api/v1/verdict", b"{}", "application/json", host=b"evil.example"
    )
    assert bad.status_code == 400
    assert bad.json()["error"] == "bad_host"
    assert "evil.example" in bad.json()["message"]


async def test_a_second_host_header_does_not_refuse_the_hosts_next_requests() -> None:
    """The edge remembers what each request head decided (``edge.heads``). A
    head that adds a refused ``Host`` to an allowed one is refused by Django
    (it reads both, joined); keyed by the first ``Host`` alone, that refusal
    was remembered for the allowed host, and every later request to it got
    the 400 too."""
    edge = Edge(_no_django)
    ok = [(b"host", b"testserver")]
    twice = [(b"host", b"testserver"), (b"host", b"evil.example")]
    doubled = await _drive(edge, http_scope("GET", "/api/v1/state", twice), [])
    assert doubled[0]["status"] == 400
    later = await _drive(edge, http_scope("GET", "/api/v1/state", ok), [])
    assert later[0]["status"] == 401  # past the head: the (missing) token's answer


def test_wrong_method_is_the_doors_405_before_the_token(api: Any) -> None:
    response = AsgiClient().request("GET", "/api/v1/verdict")  # no token at all
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"] == "method_not_allowed"
    assert response["Content-Security-Policy"] == API_POLICY


def test_an_unexpected_error_is_the_doors_500_not_html(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curfew_core.api import hot

    def broken(*args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("a bug")

    assert _verdict(api).status_code == 200  # control
    monkeypatch.setattr(hot, "verdict_body", broken)
    response = _verdict(api)
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert response["Content-Security-Policy"] == API_POLICY


def test_a_handler_outage_is_a_503_with_retry_after(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redis.exceptions import ConnectionError as RedisDown

    from curfew_core.api import hot

    def down(*args: Any, **kwargs: Any) -> bytes:
        raise RedisDown("gone")

    monkeypatch.setattr(hot, "verdict_body", down)
    response = _verdict(api)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"] == "unavailable"


async def _drive(app: Any, scope: dict[str, Any], messages: list[dict[str, Any]]) -> list[Any]:
    sent: list[Any] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def _no_django(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the edge's routes are never handed to Django")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/v1/verdict", "/v1/messages"])
async def test_no_token_is_refused_before_a_byte_of_the_body_is_read(path: str) -> None:
    read: list[Any] = []

    async def receive() -> dict[str, Any]:
        read.append(1)
        return {"type": "http.request", "body": b"x" * 10, "more_body": True}

    sent: list[Any] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = http_scope("POST", path, [(b"host", b"testserver"), (b"content-length", b"100000")])
    await Edge(_no_django)(scope, receive, send)
    assert read == []
    assert sent[0]["status"] == 401
    assert (b"connection", b"close") in sent[0]["headers"]


async def test_a_chunked_body_past_the_limit_is_a_413(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handler(request: Any) -> Any:
        raise AssertionError("never reached")

    from django.http import HttpResponse

    async def ok(request: Any) -> HttpResponse:
        return HttpResponse(b"{}", content_type="application/json")

    monkeypatch.setattr("curfew_core.proxy.not_proxied.not_proxied", ok)
    table = Table(
        (
            Door(
                "small",
                "/small/",
                API,
                lambda: 10,
                routes=(
                    Route(
                        "/small/x",
                        ("POST",),
                        "curfew_core.proxy.not_proxied.not_proxied",
                        token=False,
                    ),
                ),
            ),
            *(door for door in DOORS.doors if door.prefix == "/"),
        )
    )
    scope = http_scope(
        "POST", "/small/x", [(b"host", b"testserver"), (b"transfer-encoding", b"chunked")]
    )
    chunk = {"type": "http.request", "body": b"x" * 8, "more_body": True}
    sent = await _drive(Edge(_no_django, table), scope, [chunk, chunk])
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"] == "too_large"


async def test_a_client_gone_before_its_body_is_answered_nothing(transactional_db: None) -> None:
    from asgiref.sync import sync_to_async

    from tests.proxy.inprocess import token_at

    raw = await sync_to_async(token_at)("gone", "10:00")
    scope = http_scope(
        "POST",
        "/api/v1/verdict",
        [(b"host", b"testserver"), (b"authorization", f"Bearer {raw}".encode())],
    )
    sent = await _drive(Edge(_no_django), scope, [])
    assert sent == []


def test_the_table_routes_by_longest_prefix_whatever_the_order() -> None:
    doors = list(DOORS.doors)
    for ordered in (doors, doors[::-1]):
        table = Table(tuple(ordered))
        assert table.door_for("/v1/messages/count_tokens").dialect.name == "anthropic"
        assert table.door_for("/v1/messages").dialect.name == "anthropic"
        assert table.door_for("/v1/chat/completions").dialect is OPENAI
        assert table.door_for("/api/v1/verdict").dialect is API
        assert table.door_for("/accounts/login/").dialect.name == "page"


def test_every_handler_of_the_table_is_imported_when_the_edge_is_built() -> None:
    edge = Edge(_no_django)
    assert set(edge.handlers) == {route.handler for route in DOORS.routes()}
    bad = Table(
        (
            Door(
                "x", "/x/", API, lambda: 1, routes=(Route("/x/y", ("GET",), "curfew_core.nope.no"),)
            ),
            *(door for door in DOORS.doors if door.prefix == "/"),
        )
    )
    with pytest.raises(ImportError):
        Edge(_no_django, bad)


def test_cold_work_runs_on_the_shared_pool_never_a_new_thread_per_request() -> None:
    import asyncio

    seen: set[str] = set()

    def where() -> str:
        return threading.current_thread().name

    async def many() -> None:
        for _ in range(20):
            seen.add(await threads.run_sync(where))

    before = threading.active_count()
    asyncio.run(many())
    assert all(name.startswith("curfew-edge") for name in seen)
    assert len(seen) <= threads.POOL_THREADS
    assert threading.active_count() - before <= threads.POOL_THREADS
    assert edge_app  # the module under test is the one imported
