"""Many sockets, one listener and shared timers per process (``hub``, ``alarms``)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async

from curfew_core.realtime import alarms, hub
from curfew_core.services.events import group_event, user_group
from tests.realtime.conftest import (
    embed_token,
    local,
    next_state,
    open_live,
    session_cookie,
    socket,
)

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


async def test_sockets_of_one_user_are_one_group_member_the_hub(user, set_clock, in_memory_layer):
    from channels.layers import get_channel_layer

    set_clock(local("2026-09-29 20:00"))
    raw = await db(embed_token)(user)
    comms = [socket(token=raw) for _ in range(3)]
    for comm in comms:
        await open_live(comm)
    running = hub.hub_for_this_loop()
    assert running is not None
    members = get_channel_layer().groups[user_group(user.pk)]
    assert set(members) == {running.channel}, "one membership per process, not per socket"
    assert len(running.groups[user_group(user.pk)]) == 3

    # One group message reaches all three sockets.
    await get_channel_layer().group_send(
        user_group(user.pk), group_event(user_group(user.pk), "user.changed")
    )
    for comm in comms:
        assert (await next_state(comm))["state"]

    for comm in comms[:2]:
        await comm.disconnect()
    assert set(members) == {running.channel}, "the group stays while a socket follows it"
    task = running.task
    assert task is not None
    await comms[2].disconnect()
    assert not get_channel_layer().groups.get(user_group(user.pk))
    assert task.done(), "the last socket out ends the hub's receive loop"
    assert not task.cancelled(), "by its stop message, not by a cancel"
    assert hub.hub_for_this_loop() is None


async def test_a_message_reaches_only_the_sockets_of_its_group(
    user, other_user, set_clock, in_memory_layer
):
    from channels.layers import get_channel_layer

    set_clock(local("2026-09-29 20:00"))
    ada = socket(token=await db(embed_token)(user))
    grace = socket(token=await db(embed_token)(other_user))
    await open_live(ada)
    await open_live(grace)
    group = user_group(other_user.pk)
    await get_channel_layer().group_send(group, group_event(group, "user.changed"))
    assert (await next_state(grace))["state"]  # control: the message was delivered
    assert await ada.receive_nothing(timeout=0.5)
    for comm in (ada, grace):
        await comm.disconnect()


async def test_a_message_that_names_no_group_reaches_every_socket(
    user, other_user, set_clock, in_memory_layer
):
    """An older process during a deploy sends ``{"type": ...}`` alone: a re-read, not a loss."""
    from channels.layers import get_channel_layer

    set_clock(local("2026-09-29 20:00"))
    ada = socket(token=await db(embed_token)(user))
    grace = socket(token=await db(embed_token)(other_user))
    await open_live(ada)
    await open_live(grace)
    await get_channel_layer().group_send(user_group(user.pk), {"type": "user.changed"})
    for comm in (ada, grace):
        assert (await next_state(comm))["state"]
        await comm.disconnect()


async def test_session_ended_closes_only_that_sessions_socket(user, set_clock, in_memory_layer):
    from channels.layers import get_channel_layer

    from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED
    from curfew_core.realtime.signals import session_group

    set_clock(local("2026-09-29 20:00"))
    cookie = await db(session_cookie)(user)
    by_session = socket(cookie=cookie)
    by_token = socket(token=await db(embed_token)(user))
    await open_live(by_session)
    await open_live(by_token)
    key = cookie.split("=", 1)[1]
    group = session_group(key)
    await get_channel_layer().group_send(group, group_event(group, "session.ended"))
    closed = await by_session.receive_output(timeout=3)
    assert (closed["type"], closed["code"]) == ("websocket.close", CLOSE_UNAUTHORIZED)
    assert await by_token.receive_nothing(timeout=0.5)
    await by_token.disconnect()


async def test_sockets_waking_at_one_instant_share_one_timer(user, set_clock):
    set_clock(local("2026-09-29 11:30"), running=True)  # next change: 12:00
    raw = await db(embed_token)(user)
    comms = [socket(token=raw) for _ in range(3)]
    for comm in comms:
        await open_live(comm)
    loop = asyncio.get_running_loop()
    pending = alarms._alarms[loop]
    assert list(pending) == [local("2026-09-29 12:00")]
    (alarm,) = pending.values()
    assert len(alarm.sleepers) == 3
    for comm in comms:
        await comm.disconnect()
    assert alarm.handle is None, "the last socket of an instant cancels its timer"
    assert loop not in alarms._alarms


async def test_a_shared_timer_wakes_every_socket_at_the_boundary(user, set_clock):
    """The clock stands a second before the boundary until all three sockets have
    told their first state, then a millisecond before it for longer than their
    shared timer (a second of real time) takes to come due: a timer set for an
    earlier instant would push "off-duty" then. Then it stands at the boundary:
    the timer wakes to it whatever the setup cost. A clock running from a second
    before the setup made the first state the boundary's own when the token and
    three connects took longer than that (with a 1.5 s sleep in the setup)."""
    boundary = local("2026-09-29 12:00")  # peak hours end
    set_clock(boundary - timedelta(seconds=1))
    raw = await db(embed_token)(user)
    comms = [socket(token=raw) for _ in range(3)]
    before = [await open_live(comm) for comm in comms]
    assert {state["state"] for state in before} == {"off-duty"}
    set_clock(boundary - timedelta(milliseconds=1))
    for comm in comms:
        assert await comm.receive_nothing(timeout=1.5 if comm is comms[0] else 0)
    set_clock(boundary)
    after = [await next_state(comm, timeout=4) for comm in comms]
    assert {state["state"] for state in after} == {"on-duty"}
    for comm in comms:
        await comm.disconnect()
