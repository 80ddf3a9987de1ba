"""One token cannot starve the proxy (issue 9, item 6).

The fake upstream holds every stream after its first chunk, so calls stay open
for as long as the test wants: no timing is measured, only who got through.
A token at its share of concurrent upstream calls is told 429 at once while
another token's call goes through; when its calls end (or are abandoned) the
slots come back. A full connection pool is a quick 503, not a long wait.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from curfew_core.proxy import upstream as upstream_module
from curfew_core.proxy.concurrency import slots
from curfew_core.selectors.tokens import identify
from curfew_testkit.asgi_scope import http_scope
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import on_duty_token
from tests.proxy.inprocess import CHAT, SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)
STREAM = {**CHAT, "stream": True}


@pytest.fixture
def other_token(transactional_db: None) -> str:
    return on_duty_token("grace")


@pytest.fixture
def held(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    """The upstream, holding each stream after its first chunk until released."""
    upstream.gate = threading.Event()
    with override_settings(
        CURFEW_UPSTREAM_BASE_URL=f"{upstream.base_url}/v1",
        CURFEW_UPSTREAM_API_KEY=SECRET,
        CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN=2,
    ):
        yield upstream
    upstream.gate.set()


@pytest.fixture
async def fresh_pool() -> AsyncIterator[None]:
    await upstream_module.close_clients()
    yield
    await upstream_module.close_clients()


async def _token_id(raw: str) -> int:
    identity = await sync_to_async(identify)(raw, kind="api")
    assert identity is not None
    return identity.token_id


async def test_a_token_over_its_share_is_told_429_while_another_token_goes_through(
    token: str, other_token: str, held: FakeUpstream, fresh_pool: None
) -> None:
    first = await client(token).post("/v1/chat/completions", STREAM)
    second = await client(token).post("/v1/chat/completions", STREAM)
    assert (first.status_code, second.status_code) == (200, 200)
    assert len(held.chat_requests) == 2  # both are open upstream, held by the gate

    over = await client(token).post("/v1/chat/completions", CHAT)
    assert over.status_code == 429
    error = over.json()["error"]
    assert error["type"] == "rate_limit_error"
    assert error["code"] == "too_many_concurrent_requests"
    assert int(over["Retry-After"]) > 0
    assert over["X-Curfew-State"] == "on-duty"
    assert over["X-Curfew-Action"] == "pass"
    assert len(held.chat_requests) == 2, "the refused call went upstream"

    # Another token is not affected while the first one's calls are still open.
    other = await client(other_token).post("/v1/chat/completions", CHAT)
    assert other.status_code == 200
    assert REPLY_TEXT in (await body_of(other)).decode()
    assert len(held.chat_requests) == 3
    assert not held.finished.is_set(), "the held streams ended before the other call"

    # The streams end: the token's slots come back (the control for the 429).
    held.gate.set()  # type: ignore[union-attr]
    assert b"[DONE]" in await body_of(first)
    assert b"[DONE]" in await body_of(second)
    assert slots.held(await _token_id(token)) == 0
    again = await client(token).post("/v1/chat/completions", CHAT)
    assert again.status_code == 200
    await body_of(again)


async def test_a_stream_abandoned_before_its_relay_began_gives_its_slot_back(
    token: str, held: FakeUpstream, fresh_pool: None
) -> None:
    """The client hangs up after the answer's head was handed to the server but
    before the relay began (so the relay's own ``finally`` never runs): the slot
    and the upstream connection must come back all the same. Driven through
    the site's ASGI app, as the server drives it."""
    from curfew_site.asgi import application

    token_id = await _token_id(token)
    body = json.dumps(STREAM).encode()
    head_sent = asyncio.Event()
    first_receive = True

    async def receive() -> dict[str, Any]:
        nonlocal first_receive
        if first_receive:
            first_receive = False
            return {"type": "http.request", "body": body, "more_body": False}
        await head_sent.wait()
        return {"type": "http.disconnect"}

    sockets = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200
            assert slots.held(token_id) == 1  # held while the answer is open
            # The upstream connection the answer is being read from.
            [held_open] = upstream_module.shared_client().session.connector._acquired  # type: ignore[union-attr]
            sockets.append(held_open.transport.get_extra_info("socket"))
            head_sent.set()
            await asyncio.Event().wait()  # the client is gone: never returns

    scope = http_scope(
        "POST",
        "/v1/chat/completions",
        [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    )
    await application(scope, receive, send)
    assert head_sent.is_set()
    gc.collect()
    assert slots.held(token_id) == 0
    # The upstream answer is closed on this loop, soon after: its connection
    # is closed (not kept for reuse), its place in the pool given back, and
    # the upstream sees the proxy hang up.
    pool = upstream_module.shared_client()
    [socket] = sockets
    for _ in range(500):
        if pool.open_calls == 0 and socket.fileno() == -1:
            break
        await asyncio.sleep(0.01)
    assert pool.open_calls == 0, "the abandoned answer still holds its place in the pool"
    assert socket.fileno() == -1, "the abandoned answer's upstream connection is still open"
    held.gate.set()  # type: ignore[union-attr]
    assert await asyncio.to_thread(held.aborted.wait, 5), "the upstream kept streaming to nobody"


async def test_errors_and_refusals_give_their_slot_back(
    token: str, held: FakeUpstream, fresh_pool: None
) -> None:
    token_id = await _token_id(token)
    held.fail = (500, b'{"error": {"message": "boom"}}')
    for _ in range(3):  # more than the share: each one's slot came back
        failed = await client(token).post("/v1/chat/completions", CHAT)
        assert failed.status_code == 500
    with override_settings(CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1"):
        for _ in range(3):
            unreachable = await client(token).post("/v1/chat/completions", CHAT)
            assert unreachable.status_code == 502
    assert slots.held(token_id) == 0


async def test_a_full_pool_is_a_quick_503_not_a_long_wait(
    token: str, other_token: str, held: FakeUpstream, fresh_pool: None
) -> None:
    with override_settings(CURFEW_UPSTREAM_MAX_CONNECTIONS=1, CURFEW_UPSTREAM_POOL_TIMEOUT=0.2):
        open_stream = await client(token).post("/v1/chat/completions", STREAM)
        assert open_stream.status_code == 200
        # The one connection is busy until the gate opens (10 s at most): the
        # upstream timeout here is 600 s, so only the pool timeout can answer.
        busy = await client(other_token).post("/v1/chat/completions", CHAT)
        assert busy.status_code == 503
        assert busy.json()["error"]["code"] == "upstream_busy"
        assert int(busy["Retry-After"]) > 0
        assert not held.finished.is_set()
        held.gate.set()  # type: ignore[union-attr]
        await body_of(open_stream)
        assert slots.held(await _token_id(other_token)) == 0
