"""An outage closes the capsule socket with 1011 (it retries), never an HTTP 500.

Each test breaks one thing the socket needs, in-process; the served test in
``tests/faults`` does the same with Redis and PostgreSQL really unreachable.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from curfew_core import throttle
from curfew_core.realtime.codes import CLOSE_UNAVAILABLE
from tests.realtime.conftest import embed_token, open_live, refusal, session_cookie, socket

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


def redis_down(*args: Any, **kwargs: Any) -> Any:
    raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


async def test_embed_token_lookup_failing_closes_1011(user, monkeypatch):
    raw = await db(embed_token)(user)
    # The consumer asks the throttled lookup, which asks the token selector.
    monkeypatch.setattr(throttle, "identify", redis_down)
    code, reason = await refusal(socket(token=raw))
    assert code == CLOSE_UNAVAILABLE
    assert "retry" in reason


async def test_session_lookup_failing_closes_1011(user, monkeypatch):
    """The session is read by the auth middleware, before the consumer runs."""
    import channels.auth

    cookie = await db(session_cookie)(user)

    async def database_down(scope: Any) -> Any:
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(channels.auth, "get_user", database_down)
    code, _ = await refusal(socket(cookie=cookie))
    assert code == CLOSE_UNAVAILABLE


async def test_group_add_failing_closes_1011(user, monkeypatch):
    from channels.layers import get_channel_layer

    raw = await db(embed_token)(user)

    async def refused(*args: Any, **kwargs: Any) -> None:
        redis_down()

    monkeypatch.setattr(type(get_channel_layer()), "group_add", refused)
    code, _ = await refusal(socket(token=raw))
    assert code == CLOSE_UNAVAILABLE


async def test_channel_layer_receive_failing_closes_1011(user, monkeypatch):
    """The layer's receive runs beside the consumer; its failure used to end the
    handshake with an HTTP 500 (before accept) or drop the socket without a code."""
    from channels.layers import get_channel_layer

    raw = await db(embed_token)(user)

    async def refused(*args: Any, **kwargs: Any) -> Any:
        redis_down()

    monkeypatch.setattr(type(get_channel_layer()), "receive", refused)
    comm = socket(token=raw)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    messages = [await comm.receive_output(timeout=5)]
    while messages[-1]["type"] != "websocket.close":
        messages.append(await comm.receive_output(timeout=5))
    assert messages[-1]["code"] == CLOSE_UNAVAILABLE


async def test_control_the_same_sockets_open_when_nothing_is_down(user):
    for comm in (
        socket(token=await db(embed_token)(user)),
        socket(cookie=await db(session_cookie)(user)),
    ):
        assert (await open_live(comm))["state"]
        await comm.disconnect()
