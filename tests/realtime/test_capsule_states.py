"""A user's sockets woken together share one read, but never an older one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from curfew_core.realtime import states
from curfew_core.realtime.states import capsule_state
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create, token_revoke
from tests.realtime.conftest import local

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, set_clock: Any) -> list[int]:
    set_clock(local("2026-09-29 20:00"))
    calls: list[int] = []
    real = states.read_states

    def counting(asks: list[states.Ask], **kwargs: Any) -> Any:
        calls.extend(ask.user_id for ask in asks)
        return real(asks, **kwargs)

    monkeypatch.setattr(states, "read_states", counting)
    return calls


async def test_sockets_woken_together_share_one_read(user, reads):
    results = await asyncio.gather(*(capsule_state(user_id=user.pk, token=None) for _ in range(50)))
    assert reads == [user.pk]
    assert all(r is results[0] for r in results)


async def test_a_read_asked_for_after_a_flight_left_is_a_new_read(user, reads):
    first = await capsule_state(user_id=user.pk, token=None)
    await sync_to_async(schedule_update)(
        user=user, changes={"timezone": "Europe/Berlin"}, source="test"
    )
    second = await capsule_state(user_id=user.pk, token=None)
    assert reads == [user.pk, user.pk]
    assert first.payload["timezone"] == "Asia/Shanghai"
    assert second.payload["timezone"] == "Europe/Berlin"


async def test_users_never_share_a_read(user, other_user, reads):
    mine, theirs = await asyncio.gather(
        capsule_state(user_id=user.pk, token=None),
        capsule_state(user_id=other_user.pk, token=None),
    )
    assert sorted(reads) == sorted([user.pk, other_user.pk])
    assert mine is not theirs


async def test_a_revoked_or_foreign_token_gets_nothing_while_the_others_get_the_state(
    user, other_user, reads
):
    def tokens() -> tuple[str, str, str]:
        live = token_create(user=user, name="live", kind="embed")[1]
        gone, gone_raw = token_create(user=user, name="gone", kind="embed")
        token_revoke(user=user, token_id=gone.pk)
        foreign = token_create(user=other_user, name="foreign", kind="embed")[1]
        return live, gone_raw, foreign

    live, gone, foreign = await sync_to_async(tokens)()
    answers = await asyncio.gather(
        *(capsule_state(user_id=user.pk, token=t) for t in (live, gone, foreign, None))
    )
    assert [a is not None for a in answers] == [True, False, False, True]
    assert reads == [user.pk]


async def test_a_joiner_going_away_does_not_cancel_the_others(user, reads):
    leaving = asyncio.ensure_future(capsule_state(user_id=user.pk, token=None))
    staying = asyncio.ensure_future(capsule_state(user_id=user.pk, token=None))
    await asyncio.sleep(0)
    leaving.cancel()
    state = await staying
    assert state is not None
    assert state.payload["state"] == "on-duty"
