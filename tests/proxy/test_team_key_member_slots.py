"""Through a team key each member has their own share of upstream slots
(``CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN``), as a token of their own would:
one member holding all of theirs is told 429 while another member's call
through the same key goes upstream. The fake upstream holds every stream
after its first chunk, so calls stay open as long as the test wants."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.models import Team
from curfew_core.proxy import upstream as upstream_module
from curfew_core.proxy.concurrency import slots
from curfew_core.selectors.tokens import identify
from curfew_core.services.teams import (
    member_add,
    team_create,
    team_schedule_update,
    team_token_create,
)
from curfew_testkit.fake_reply import REPLY_TEXT
from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import on_duty_token
from tests.proxy.inprocess import CHAT, SECRET, body_of, client

pytestmark = pytest.mark.django_db(transaction=True)
STREAM = {**CHAT, "stream": True}


@pytest.fixture
def team_key(transactional_db: None) -> str:
    """A team key of a team whose members (alice, carol) are on duty."""
    on_duty_token("alice")
    on_duty_token("carol")
    acme = team_create(name="acme", admin=User.objects.get(username="alice"))
    member_add(team=acme, user=User.objects.get(username="carol"))
    team_schedule_update(team=Team.objects.get(pk=acme.pk), changes={"enabled": False})
    return team_token_create(team=acme)[1]


@pytest.fixture
def held(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
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


async def _key_id(raw: str) -> int:
    identity = await sync_to_async(identify)(raw, kind="gateway")
    assert identity is not None
    return identity.token_id


async def _user_id(name: str) -> int:
    user = await User.objects.aget(username=name)
    return int(user.pk)


async def chat(key: str, member: str, body: dict[str, Any]) -> Any:
    return await client(key).post("/v1/chat/completions", body, **{"X-Curfew-User": member})


async def test_one_member_at_their_share_leaves_another_member_a_slot(
    team_key: str, held: FakeUpstream, fresh_pool: None
) -> None:
    first = await chat(team_key, "alice", STREAM)
    second = await chat(team_key, "alice", STREAM)
    assert (first.status_code, second.status_code) == (200, 200)
    assert len(held.chat_requests) == 2
    over = await chat(team_key, "alice", CHAT)
    assert over.status_code == 429
    error = over.json()["error"]
    assert error["code"] == "too_many_concurrent_requests"
    assert int(over["Retry-After"]) > 0
    assert len(held.chat_requests) == 2, "the refused call went upstream"

    # Carol, through the same key, while alice's two are still open (before:
    # the key's one share was full, and carol was told 429 too).
    other = await chat(team_key, "carol", CHAT)
    assert other.status_code == 200, other.content
    assert REPLY_TEXT in (await body_of(other)).decode()
    assert len(held.chat_requests) == 3
    key_id, alice = await _key_id(team_key), await _user_id("alice")
    assert slots.held((key_id, alice)) == 2
    assert slots.held(key_id) == 0  # the key's own share is not the member's
    assert "member" in error["message"]

    held.gate.set()  # type: ignore[union-attr]
    assert b"[DONE]" in await body_of(first)
    assert b"[DONE]" in await body_of(second)
    assert slots.held((key_id, alice)) == 0
    again = await chat(team_key, "alice", CHAT)
    assert again.status_code == 200
    await body_of(again)
