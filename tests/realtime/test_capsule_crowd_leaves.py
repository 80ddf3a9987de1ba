"""A crowd of capsules leaves and takes what the process kept for it (issue 40).

Measured on ``bin/serve`` (``bench/capsule_soak.py``): 10,000 sockets took the
server from 151 to 367 MiB, and closing them took it to 421. Python freed every
socket's objects; what grew at the close was the way out: Channels hopped to
the process's one sync thread three times per socket (``aclose_old_connections``
before each message's handler and again in the disconnect handler), ten
thousand sockets leaving queued thirty thousand waits, each with its futures
and context copies. These tests count what a crowd leaves behind, not memory
or time: thread hops, tables and their capacity, tasks, groups, timers, and
the one release a crowd's leaving asks for.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from curfew_core.realtime import alarms, consumers, hub, release, states
from tests.realtime.conftest import embed_token, open_live, socket

pytestmark = pytest.mark.django_db(transaction=True)

CROWD = 40


def crowd(token: str) -> list[Any]:
    """``CROWD`` sockets, each from its own client address."""
    sockets = []
    for index in range(CROWD):
        comm = socket(token=token)
        comm.scope["client"] = (f"203.0.113.{index}", 40000)  # read when it connects
        sockets.append(comm)
    return sockets


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``aclose_old_connections`` Channels makes (a hop to the sync thread)."""
    import channels.consumer
    import channels.generic.websocket

    made: list[str] = []

    def counted(module: Any) -> None:
        original = module.aclose_old_connections

        async def hop() -> None:
            made.append(module.__name__)
            await original()

        monkeypatch.setattr(module, "aclose_old_connections", hop)

    counted(channels.consumer)
    counted(channels.generic.websocket)
    return made


@pytest.fixture(autouse=True)
def _fresh_release() -> Any:
    release.reset()
    yield
    release.reset()


async def test_a_crowd_comes_and_goes_without_a_sync_thread_hop_a_message(
    user: Any, frozen: None, hops: list[str]
) -> None:
    token = await sync_to_async(embed_token)(user)
    sockets = crowd(token)
    for comm in sockets:
        await open_live(comm)
    for comm in sockets:
        await comm.disconnect()
    assert hops == [], f"{len(hops)} hops to the sync thread for {CROWD} sockets"


async def test_nothing_of_a_crowd_stays_after_it_leaves(
    user: Any, frozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release, "CROWD", CROWD)
    monkeypatch.setattr(release, "DELAY_SECONDS", 0.0)
    token = await sync_to_async(embed_token)(user)
    loop = asyncio.get_running_loop()
    tasks_before = len(asyncio.all_tasks())
    sockets = crowd(token)
    for comm in sockets:
        await open_live(comm)
    assert len(consumers._per_address) == CROWD
    assert len(alarms._armed) == CROWD
    for comm in sockets:
        await comm.disconnect()
    for _ in range(50):  # the hub's stop message, the release's thread
        await asyncio.sleep(0.02)
        if hub.hub_for_this_loop() is None and release.releases and not release._running:
            break

    def capacity(table: dict[Any, Any]) -> int:
        """Bytes ``table`` holds beyond an empty one of its kind."""
        return sys.getsizeof(table) - sys.getsizeof(type(table)())

    left = {
        "addresses": dict(consumers._per_address),
        "address table bytes": capacity(consumers._per_address),
        "armed": len(alarms._armed),
        "armed table bytes": capacity(alarms._armed),
        "alarms": dict(alarms._alarms),
        "hub": hub.hub_for_this_loop(),
        "queued": dict(consumers._queued),
        "bursts": len(consumers._bursts),
        # (Other tests' loops may have left theirs: only this one's count here.)
        "prepared": {k: v for k, v in states._prepared.items() if v.loop is loop},
        "tasks": len(asyncio.all_tasks()) - tasks_before,
    }
    assert left == {
        "addresses": {},
        "address table bytes": 0,
        "armed": 0,
        "armed table bytes": 0,
        "alarms": {},
        "hub": None,
        "queued": {},
        "bursts": 0,
        "prepared": {},
        "tasks": 0,
    }
    assert release.releases == 1, "a crowd gone asks for memory back once"


async def test_sockets_coming_and_going_in_ones_ask_for_nothing(
    user: Any, frozen: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release, "DELAY_SECONDS", 0.0)
    token = await sync_to_async(embed_token)(user)
    for _ in range(5):
        comm = socket(token=token)
        await open_live(comm)
        await comm.disconnect()
    await asyncio.sleep(0.05)
    assert release.releases == 0


async def test_an_open_socket_holds_no_cache_object_of_its_own(user: Any, frozen: None) -> None:
    """Django keeps a cache object per context; a socket's reads must not leave
    one in the socket's context for as long as it is open (issue 41)."""
    import gc

    from django.core.cache.backends.base import BaseCache

    def caches() -> int:
        # type(), not isinstance(): isinstance asks a lazy object (another
        # test's request.user) for its __class__, which evaluates it: a query
        # from the event loop (failed in CI on PostgreSQL).
        return sum(1 for o in gc.get_objects() if issubclass(type(o), BaseCache))

    token = await sync_to_async(embed_token)(user)
    before = caches()
    sockets = crowd(token)
    for comm in sockets:
        await open_live(comm)
    held = caches() - before
    for comm in sockets:
        await comm.disconnect()
    assert held < 3, f"{held} cache objects held by {CROWD} open sockets"
