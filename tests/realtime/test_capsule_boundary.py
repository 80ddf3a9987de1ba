"""A boundary's fan-out: one read per user made ahead, each socket its own state."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.realtime import clock, consumers, hub, states, timers
from curfew_core.services.events import user_group
from curfew_core.services.schedules import schedule_update
from tests.realtime.conftest import embed_token, local, next_state, open_live, socket

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async
BOUNDARY = local("2026-09-29 12:00")  # Tuesday: the morning peak ends (off-duty → on-duty)


def move_to(user: User, zone: str) -> None:
    schedule_update(user=user, changes={"timezone": zone}, source="test")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, datetime]]:
    """Every state read: (user, the instant read for)."""
    seen: list[tuple[int, datetime]] = []
    real = states.read_states

    def counting(asks: list[states.Ask], **kwargs: Any) -> Any:
        seen.extend((ask.user_id, kwargs["now"]) for ask in asks)
        return real(asks, **kwargs)

    monkeypatch.setattr(states, "read_states", counting)
    return seen


async def until(condition: Any, timeout: float = 5) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


def ahead(reads: list[tuple[int, datetime]]) -> set[int]:
    """The users whose state was read for the boundary (ahead of it, or at it)."""
    return {user_id for user_id, now in reads if now == BOUNDARY + timers.LATE}


async def at_the_boundary(set_clock: Any, read_ahead: Any) -> None:
    """Move the held clock to ``BOUNDARY`` once the read made ahead of it is in.

    The clock stands 3 s before the boundary through the setup and the connects,
    as a clock started there would stand if they took no time: the read ahead is
    then 2 s of real time after the first connect and the sockets' timer 3 s
    (both set from the held clock). It stands there until that read is made,
    then at the boundary and no further: the timer wakes to the boundary
    whatever the setup cost, and only a timer set for the boundary can push. A
    clock running from before the setup (the tokens, the connects) told the
    boundary's own state first when they took longer than 3 s.
    """
    await until(read_ahead)
    assert clock.now() < BOUNDARY
    set_clock(BOUNDARY)


async def test_two_users_at_one_boundary_each_get_their_own_state(
    user, other_user, set_clock, reads
):
    # Manila and Shanghai are both UTC+8 all year: one boundary instant, two states.
    await db(move_to)(other_user, "Asia/Manila")
    set_clock(BOUNDARY - timedelta(seconds=3))  # held: see ``at_the_boundary``
    ada = [socket(token=await db(embed_token)(user)) for _ in range(2)]
    grace = [socket(token=await db(embed_token)(other_user)) for _ in range(2)]
    for comm in ada + grace:
        first = await open_live(comm)
        assert (first["state"], first["valid_until"]) == ("off-duty", BOUNDARY.isoformat())
    await at_the_boundary(set_clock, lambda: {user.pk, other_user.pk} <= ahead(reads))
    for comms, zone in ((ada, "Asia/Shanghai"), (grace, "Asia/Manila")):
        for comm in comms:
            pushed = await next_state(comm, timeout=6)
            assert (pushed["state"], pushed["timezone"]) == ("on-duty", zone)
    at_boundary = [user_id for user_id, now in reads if now == BOUNDARY + timers.LATE]
    assert sorted(at_boundary) == sorted([user.pk, other_user.pk]), "one read per user"
    for comm in ada + grace:
        await comm.disconnect()


async def test_users_sharing_a_boundary_are_read_ahead_together(
    user, other_user, set_clock, monkeypatch
):
    """A team's members share their boundaries: one read made ahead for all of
    them (one timer, one hop), not one per member."""
    hops: list[tuple[datetime, list[int]]] = []
    real = states.read_states

    def recording(asks: list[states.Ask], **kwargs: Any) -> Any:
        hops.append((kwargs["now"], sorted(ask.user_id for ask in asks)))
        return real(asks, **kwargs)

    monkeypatch.setattr(states, "read_states", recording)
    await db(move_to)(other_user, "Asia/Manila")  # the same instant, another state
    set_clock(BOUNDARY - timedelta(seconds=3))  # held: see ``at_the_boundary``
    comms = [socket(token=await db(embed_token)(person)) for person in (user, other_user)]
    for comm in comms:
        await open_live(comm)
    await at_the_boundary(set_clock, lambda: any(n == BOUNDARY + timers.LATE for n, _ in hops))
    for comm in comms:
        assert (await next_state(comm, timeout=6))["state"] == "on-duty"
    ahead = [users for now, users in hops if now == BOUNDARY + timers.LATE]
    assert ahead == [sorted([user.pk, other_user.pk])]
    for comm in comms:
        await comm.disconnect()


async def test_a_change_heard_after_the_read_ahead_is_not_undone_at_the_boundary(
    user, set_clock, reads
):
    set_clock(BOUNDARY - timedelta(seconds=3))  # held until the change is heard
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    assert first["timezone"] == "Asia/Shanghai"
    # The boundary's state is read ahead of it (control), then the user changes.
    await until(lambda: (user.pk, BOUNDARY + timers.LATE) in reads)
    assert clock.now() < BOUNDARY
    await db(move_to)(user, "Asia/Manila")  # the same boundary instant (UTC+8)
    changed = await next_state(comm, timeout=6)
    assert (changed["state"], changed["timezone"]) == ("off-duty", "Asia/Manila")
    set_clock(BOUNDARY)
    pushed = await next_state(comm, timeout=6)
    # The read made before the change would say Shanghai.
    assert (pushed["state"], pushed["timezone"]) == ("on-duty", "Asia/Manila")
    await comm.disconnect()


async def test_a_read_ahead_is_dropped_when_the_process_stops_following_the_user(user, set_clock):
    """With no socket left, this process hears none of the user's changes: a later
    socket must not be sent a read made before them."""
    set_clock(BOUNDARY - timedelta(seconds=30))
    comm = socket(token=await db(embed_token)(user))
    await open_live(comm)
    assert user.pk in states._prepared  # control: read ahead for the boundary
    await comm.disconnect()
    assert user.pk not in states._prepared


async def test_a_socket_failing_mid_fan_out_does_not_stop_the_rest(user, set_clock):
    set_clock(local("2026-09-29 20:00"))
    raw = await db(embed_token)(user)
    comms = [socket(token=raw) for _ in range(3)]
    for comm in comms:
        await open_live(comm)
    running = hub.hub_for_this_loop()
    assert running is not None
    members = list(running.groups[user_group(user.pk)])
    assert len(members) == 3

    async def gone(message: Any) -> None:
        raise ConnectionResetError("the client went away")

    broken = members[0]
    broken.base_send = gone  # type: ignore[attr-defined]
    # The failing socket first in the burst: the sockets after it still hear.
    await consumers.burst(members)  # type: ignore[arg-type]
    heard = [comm for comm in comms if not await comm.receive_nothing(timeout=0.3)]
    assert len(heard) == 2
    for comm in heard:
        assert (await next_state(comm, timeout=6))["state"]
    for comm in comms:
        await comm.disconnect()
