"""The proxy's lean route (issue 13, ``curfew_core/proxy/lean.py``): a warm
short-circuit answered beside Django, through the site's ASGI application.

Here is what only this route promises: it is the one answering a warm
short-circuit (no thread, no query, Django's route not entered), its answer is
the Django route's, and everything else (a pass, a clamp, a cold cache, the
other doors and methods) is Django's route's, read and counted there once.
The ``django`` door below is the same application with the lean route serving
no path (``lean.ROUTES`` empty): Django's proxy route answers everything.
"""

from __future__ import annotations

import json
import re
from io import BytesIO
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import override_settings

from curfew_core.asgi_front import ScopeHeaders
from curfew_core.http_headers import API_POLICY
from curfew_core.ledger import recorder
from curfew_core.models import Decision
from curfew_core.proxy import lean, views
from curfew_core.proxy.asgi import ProxyHandler
from curfew_testkit.asgi_scope import http_scope
from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from tests.api.lean_client import AsgiClient, AsgiResponse
from tests.proxy.inprocess import token_at

pytestmark = pytest.mark.django_db(transaction=True)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4096}
RESPONSES = {"model": "m", "input": "hi", "max_output_tokens": 4096}
MESSAGES = {"model": "m", "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}]}
COMPLETIONS = {"model": "m", "prompt": "hi", "max_tokens": 4096}

#: Every door the lean route serves, each streamed and not: (ledger door, path, body).
SHORT = [
    (door, path, {**body, **stream})
    for door, path, body in (
        ("chat", "/v1/chat/completions", CHAT),
        ("responses", "/v1/responses", RESPONSES),
        ("messages", "/v1/messages", MESSAGES),
        ("completions", "/v1/completions", COMPLETIONS),
    )
    for stream in ({}, {"stream": True})
]
SHORT_IDS = [f"{door}{'-sse' if body.get('stream') else ''}" for door, _, body in SHORT]
SECURITY = ("X-Content-Type-Options", "Referrer-Policy", "Cross-Origin-Opener-Policy")


class Watch:
    """Which route answered, and what the request took: trips to a thread
    (every ``sync_to_async``: Django's and ours) and database cursors (any thread)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.django = 0
        self.threads = 0
        self.queries = 0
        handler = ProxyHandler.__call__
        hop = SyncToAsync.__call__
        cursor = BaseDatabaseWrapper.cursor

        async def counted_handler(inner: Any, *args: Any) -> None:
            self.django += 1
            await handler(inner, *args)

        async def counted_hop(inner: Any, *args: Any, **kwargs: Any) -> Any:
            self.threads += 1
            return await hop(inner, *args, **kwargs)

        def counted_cursor(inner: Any) -> Any:
            self.queries += 1
            return cursor(inner)

        monkeypatch.setattr(ProxyHandler, "__call__", counted_handler)
        monkeypatch.setattr(SyncToAsync, "__call__", counted_hop)
        monkeypatch.setattr(BaseDatabaseWrapper, "cursor", counted_cursor)


def _client(token: str) -> AsgiClient:
    return AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {token}"})


async def post(token: str, path: str, body: Any, **extra: Any) -> AsgiResponse:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await _client(token).arequest("POST", path, raw, "application/json", **extra)


async def warm(token: str) -> None:
    """Put the token's check and its user's rows in the cache (the API's state
    route reads them, and nothing of it is a model call or in the ledger)."""
    assert (await _client(token).arequest("GET", "/api/v1/state")).status_code == 200


async def recorded() -> list[Decision]:
    def read() -> list[Decision]:
        recorder.flush()
        return list(Decision.objects.order_by("id"))

    return await sync_to_async(read)()


def comparable(content: bytes) -> bytes:
    """An answer without what differs between two calls (its ids and times)."""
    content = re.sub(rb"curfew[_-][0-9a-f]{8,}", b"curfew-ID", content)
    return re.sub(rb'"created(_at)?": ?\d+', b'"created": 0', content)


@pytest.mark.parametrize(("door", "path", "body"), SHORT, ids=SHORT_IDS)
async def test_a_warm_short_circuit_takes_no_thread_no_query_and_not_django(
    both_upstreams: None,
    closing: None,
    upstream: FakeUpstream,
    anthropic_upstream: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    door: str,
    path: str,
    body: dict[str, Any],
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    await warm(token)
    watch = Watch(monkeypatch)
    response = await post(token, path, body, HTTP_X_CURFEW_SESSION="s-1")
    assert response.status_code == 200, response.content
    assert response["X-Curfew-Action"] == "short-circuit"
    assert (watch.django, watch.threads, watch.queries) == (0, 0, 0)
    assert upstream.requests == anthropic_upstream.requests == []
    [row] = await recorded()
    assert (row.door, row.action, row.session) == (door, "short-circuit", "s-1")
    assert (row.input_tokens, row.output_tokens, row.budget_before) == (0, 0, 4096)


@pytest.mark.parametrize(("door", "path", "body"), SHORT, ids=SHORT_IDS)
async def test_the_answer_is_the_django_routes(
    both_upstreams: None,
    closing: None,
    monkeypatch: pytest.MonkeyPatch,
    door: str,
    path: str,
    body: dict[str, Any],
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    await warm(token)
    watch = Watch(monkeypatch)
    mine = await post(token, path, body)
    assert watch.django == 0
    monkeypatch.setattr(lean, "ROUTES", {})
    django = await post(token, path, body)
    assert watch.django == 1  # the control: Django's route answered this one
    assert mine.status_code == django.status_code == 200
    assert comparable(mine.content) == comparable(django.content)
    names = ("Content-Type", "Cache-Control", "X-Curfew-State", "X-Curfew-Action", *SECURITY)
    for name in (*names, "X-Frame-Options", "Content-Security-Policy", "Content-Length"):
        assert mine[name] == django[name], name
    assert mine["Content-Security-Policy"] == API_POLICY
    assert [row.door for row in await recorded()] == [door, door]


@pytest.mark.parametrize(
    ("body", "extra", "param"),
    [
        (b"{not json", {}, None),
        (b"[1, 2]", {}, None),
        (json.dumps(CHAT).encode(), {"HTTP_X_CURFEW_SUBAGENT": "maybe"}, "X-Curfew-Subagent"),
    ],
    ids=["not-json", "not-an-object", "bad-scope-header"],
)
async def test_a_bad_call_is_the_django_routes_400(
    both_upstreams: None,
    monkeypatch: pytest.MonkeyPatch,
    body: bytes,
    extra: dict[str, str],
    param: str | None,
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    await warm(token)
    watch = Watch(monkeypatch)
    mine = await post(token, "/v1/chat/completions", body, **extra)
    assert watch.django == 0
    monkeypatch.setattr(lean, "ROUTES", {})
    django = await post(token, "/v1/chat/completions", body, **extra)
    assert watch.django == 1
    assert mine.status_code == django.status_code == 400
    assert mine.json() == django.json()
    assert mine.json()["error"]["param"] == param
    for name in ("X-Curfew-State", "X-Curfew-Action"):
        assert mine[name] == django[name], name
    assert (mine["X-Curfew-State"], mine["X-Curfew-Action"]) == ("off-duty", "none")
    assert await recorded() == []  # nothing was answered for the model


@pytest.mark.parametrize(
    ("clock", "action"), [("20:00", "pass"), ("23:30", "clamp"), ("10:00", "pass")]
)
async def test_a_call_that_goes_upstream_goes_through_django_counted_once(
    both_upstreams: None,
    closing: None,
    upstream: FakeUpstream,
    monkeypatch: pytest.MonkeyPatch,
    clock: str,
    action: str,
) -> None:
    """On duty, winding, and an exempt purpose off duty: forwarded by Django's
    route (the recording fake is the control), judged once (on the lean route,
    whose verdict Django's view acts on) and the token's rate counted once per
    call: with room for the warm-up and two calls, the third is refused."""
    token = await sync_to_async(token_at)("upstream", clock)
    extra = {"HTTP_X_CURFEW_PURPOSE": "title"} if clock == "10:00" else {}
    judged_again: list[str] = []

    async def judge(*args: Any) -> Any:
        judged_again.append("judge")
        raise AssertionError("judged twice")

    monkeypatch.setattr(views, "judge", judge)
    with override_settings(CURFEW_TOKEN_RATE="3/minute"):
        await warm(token)  # counted: one
        watch = Watch(monkeypatch)
        answers = [await post(token, "/v1/chat/completions", CHAT, **extra) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0]["X-Curfew-Action"] == action
    assert len(upstream.chat_requests) == 2
    assert watch.django == 3
    assert judged_again == []
    [row, _] = await recorded()
    assert (row.door, row.action) == ("chat", action)


async def test_a_throttled_short_circuit_is_refused_in_the_doors_shape(
    both_upstreams: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    with override_settings(CURFEW_TOKEN_RATE="2/minute"):
        await warm(token)
        watch = Watch(monkeypatch)
        first = await post(token, "/v1/messages", MESSAGES)
        refused = await post(token, "/v1/messages", MESSAGES)
        openai = await post(token, "/v1/chat/completions", CHAT)
    assert watch.django == 0
    assert first.status_code == 200
    assert refused.status_code == openai.status_code == 429
    assert refused.json()["error"]["type"] == "rate_limit_error"  # Anthropic's shape
    assert openai.json()["error"]["code"] == "rate_limit_exceeded"  # OpenAI's
    assert int(refused["Retry-After"]) >= 1
    assert (refused["X-Curfew-State"], refused["X-Curfew-Action"]) == ("unknown", "none")
    assert len(await recorded()) == 1


async def test_a_cold_call_is_djangos_and_warms_the_next(
    both_upstreams: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    watch = Watch(monkeypatch)
    cold = await post(token, "/v1/chat/completions", CHAT)
    assert (cold.status_code, watch.django) == (200, 1)
    assert watch.threads > 0  # the token check and the rows, read in a thread
    warm_answer = await post(token, "/v1/chat/completions", CHAT)
    assert (warm_answer.status_code, watch.django) == (200, 1)
    assert cold["X-Curfew-Action"] == warm_answer["X-Curfew-Action"] == "short-circuit"
    assert [row.door for row in await recorded()] == ["chat", "chat"]


async def test_what_the_lean_route_does_not_serve_is_djangos(
    both_upstreams: None, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    await warm(token)
    watch = Watch(monkeypatch)
    embeddings = await post(token, "/v1/embeddings", {"model": "m", "input": "hi"})
    assert embeddings.status_code == 503  # refused off duty, by the embeddings door
    wrong_method = await _client(token).arequest("GET", "/v1/chat/completions")
    assert wrong_method.status_code == 405
    unknown = await post("no-such-token", "/v1/chat/completions", CHAT)
    assert unknown.status_code == 401
    elsewhere = await post(token, "/v1/chat/completions", CHAT, host=b"evil.example")
    assert elsewhere.status_code == 400  # Django's Host check
    assert watch.django == 4
    control = await post(token, "/v1/chat/completions", CHAT)
    assert (control.status_code, watch.django) == (200, 4)
    assert upstream.requests == []


def test_scope_headers_read_as_djangos_request_headers() -> None:
    raw = [
        (b"host", b"testserver"),
        (b"authorization", b"Bearer t"),
        (b"x-curfew-purpose", b"a"),
        (b"x-curfew-purpose", b"b"),  # repeated: joined
        (b"x_curfew_session", b"spoofed"),  # an underscore: ignored
        (b"X-Api-Key", b"k"),
    ]
    scope = http_scope("POST", "/v1/chat/completions", raw)
    django = ASGIRequest(scope, BytesIO()).headers
    mine = ScopeHeaders(scope)
    for name in (
        "Authorization",
        "x-curfew-purpose",
        "X-Curfew-Session",
        "X_Curfew_Purpose",
        "x-api-key",
        "absent",
    ):
        assert mine.get(name) == django.get(name), name
    assert mine.get("x-curfew-purpose") == "a,b"
    assert mine.get("x-curfew-session") is None


async def test_a_client_gone_before_its_body_is_answered_nothing_and_not_counted(
    both_upstreams: None,
) -> None:
    token = await sync_to_async(token_at)("peak", "10:00")
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def django(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a warm short-circuit is not handed on")

    headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode())]
    scope = http_scope("POST", "/v1/chat/completions", headers)
    with override_settings(CURFEW_TOKEN_RATE="2/minute"):
        await warm(token)  # counted: one
        await lean.LeanProxy(django)(scope, receive, send)
        assert sent == []
        again = await post(token, "/v1/chat/completions", CHAT)  # two: within the rate
    assert again.status_code == 200
    assert len(await recorded()) == 1
