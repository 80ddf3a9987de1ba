"""Capsule sockets per client address (issue 41, finding 2): embed tokens are
public by design and one address held 1,500 sockets; each process now holds
at most ``CURFEW_CAPSULE_SOCKETS_PER_ADDRESS`` from one address, the next is
closed 4429 (the capsule retries with its backoff), and a socket that closes
gives its place back."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from curfew_core.realtime import consumers
from curfew_core.realtime.codes import CLOSE_RATE_LIMITED
from tests.realtime.conftest import embed_token, open_live, refusal, socket

pytestmark = pytest.mark.django_db(transaction=True)

ELSEWHERE = [(b"x-forwarded-for", b"203.0.113.9")]


@override_settings(CURFEW_CAPSULE_SOCKETS_PER_ADDRESS=2)
async def test_the_third_socket_from_one_address_is_closed_4429(user, set_clock):
    token = await sync_to_async(embed_token)(user)
    first, second = socket(token=token), socket(token=token)
    await open_live(first)
    await open_live(second)
    code, reason = await refusal(socket(token=token))
    assert code == CLOSE_RATE_LIMITED
    assert "too many capsule sockets" in reason
    # A closed socket gives its place back.
    await first.disconnect()
    again = socket(token=token)
    await open_live(again)
    await again.disconnect()
    await second.disconnect()
    assert dict(consumers._per_address) == {}, "every place given back"


@override_settings(CURFEW_CAPSULE_SOCKETS_PER_ADDRESS=0)
async def test_control_zero_is_no_limit(user, set_clock):
    token = await sync_to_async(embed_token)(user)
    sockets = [socket(token=token) for _ in range(4)]
    for comm in sockets:
        await open_live(comm)
    for comm in sockets:
        await comm.disconnect()
