"""Without Redis, a change made by another process reaches open capsules at once.

The in-memory channel layer is this process's alone: ``manage.py curfew off``
(another process) publishes into nothing. One watcher per server process,
running only while capsules are open, notices such changes in the database.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curfew_core.models import ApiToken, Override
from curfew_core.realtime import watch
from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create
from curfew_testkit.server import ServedApp
from tests.realtime.conftest import embed_token, local, open_live, socket

db = sync_to_async


async def pushed(comm: Any, timeout: float = 5) -> dict[str, Any]:
    message = await comm.receive_output(timeout=timeout)
    assert message["type"] == "websocket.send", message
    payload: dict[str, Any] = json.loads(message["text"])
    return payload


@pytest.fixture
def frozen(set_clock: Any, settings: Any) -> Iterator[None]:
    """On duty until 23:00 (no timer fires meanwhile), on the in-memory layer
    (the watcher's case; with Redis the layer itself crosses processes)."""
    from channels.layers import channel_layers

    set_clock(local("2026-09-29 20:00"))
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def written_elsewhere(user: Any) -> None:
    """Force off as another process's commit looks from here: a row changed,
    no event in this process, and this process's cache still holds the old copy."""
    Override.objects.filter(user=user).update(
        forced_off_until=local("2026-09-30 09:00"), updated_at=timezone.now()
    )


@pytest.mark.django_db(transaction=True)
async def test_a_change_from_another_process_reaches_the_capsule(user, frozen):
    await db(Override.objects.create)(user=user)
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    assert first["forced"] is False
    await db(written_elsewhere)(user)
    state = await pushed(comm)
    assert state["forced"] is True, "the first push already has the change: the stale copy went"
    assert state["state"] == "lights-out"
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_token_revoked_by_another_process_closes_its_capsule(user, frozen):
    token, raw = await db(token_create)(user=user, name="dash", kind=ApiToken.Kind.EMBED)
    comm = socket(token=raw)
    await open_live(comm)
    await db(lambda: ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now()))()
    message = await comm.receive_output(timeout=5)
    assert message["type"] == "websocket.close"
    assert message["code"] == CLOSE_UNAUTHORIZED


@pytest.mark.django_db(transaction=True)
async def test_a_change_made_here_is_pushed_once(user, frozen):
    """The writer's own event already told the capsule; the watcher does not repeat it."""
    comm = socket(token=await db(embed_token)(user))
    await open_live(comm)
    await db(schedule_update)(user=user, changes={"timezone": "Europe/Berlin"}, source="test")
    assert (await pushed(comm))["timezone"] == "Europe/Berlin"
    assert await comm.receive_nothing(timeout=4 * watch.POLL_SECONDS)
    await comm.disconnect()


async def test_no_watcher_when_the_layer_crosses_processes(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    assert not watch.needed(channel_layers["default"])
    channel_layers.backends.clear()


@pytest.mark.django_db(transaction=True)
async def test_the_watcher_runs_only_while_a_capsule_is_open(user, frozen):
    assert watch.watcher_for_this_loop() is None
    comm = socket(token=await db(embed_token)(user))
    await open_live(comm)
    watcher = watch.watcher_for_this_loop()
    assert watcher is not None
    assert watcher.task is not None
    assert not watcher.task.done()
    await comm.disconnect()
    assert watch.watcher_for_this_loop() is None
    await watch.asyncio.sleep(0)
    assert watcher.task.done()


@pytest.mark.django_db
def test_one_query_per_poll(user):
    Override.objects.create(user=user)
    watcher = watch.Watcher(loop=None, layer=None)  # type: ignore[arg-type]
    with CaptureQueriesContext(connection) as queries:
        assert watcher.poll(notify=True) == set(), "this process's own write is not news"
        written_elsewhere(user)
        assert watcher.poll(notify=True) == {user.pk}
        assert watcher.poll(notify=True) == set()
    assert len(queries) == 4  # three polls and the write


@pytest.mark.django_db
def test_a_slow_commit_is_still_caught_once(user):
    """A row stamped before the last poll but committed after it is reported."""
    row = Override.objects.create(user=user)
    watcher = watch.Watcher(loop=None, layer=None)  # type: ignore[arg-type]
    watcher.poll(notify=False)
    earlier = timezone.now() - timedelta(seconds=3)
    Override.objects.filter(pk=row.pk).update(updated_at=earlier)
    assert watcher.poll(notify=True) == {user.pk}
    assert watcher.poll(notify=True) == set()


# -- the reported case, served -------------------------------------------------------


@pytest.fixture(scope="module")
def served_without_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    app = ServedApp(Path(tmp_path_factory.mktemp("terminal")), env={"REDIS_URL": ""})
    app.prepare()
    app.start()
    yield app
    app.stop()


def test_manage_py_curfew_off_reaches_an_open_capsule(served_without_redis):
    from websockets.sync.client import connect

    app = served_without_redis
    app.create_user("term-ada")
    embed = app.manage("curfew", "embed-token", "--user", "term-ada").stdout.split()[-1]
    # An on-duty evening, whatever the wall clock says: while winding, the capsule
    # also pushes its progress on a timer, and such a tick could come first.
    app.manage("curfew", "debug", "2026-09-29 20:00", "--user", "term-ada")
    with connect(f"ws://127.0.0.1:{app.port}/ws/capsule/?token={embed}") as capsule:
        before = json.loads(capsule.recv(timeout=5))
        assert before["forced"] is False
        app.manage("curfew", "off", "--user", "term-ada")  # its own process, no Redis
        done = time.monotonic()
        after = json.loads(capsule.recv(timeout=5))
        waited = time.monotonic() - done
    # The first push already says so: not a timer's re-read of a stale cached copy.
    assert after["forced"] is True
    assert after["state"] == "lights-out"
    assert waited < 5, f"took {waited:.1f}s"


@pytest.mark.django_db
def test_too_many_changes_at_once_re_read_every_capsule_here(user, other_user, monkeypatch):
    """Bounded: past ``MAX_ROWS`` the watcher stops sorting and tells every capsule user."""
    from types import SimpleNamespace

    monkeypatch.setattr(watch, "MAX_ROWS", 1)
    for someone in (user, other_user):
        Override.objects.create(user=someone)
    layer = SimpleNamespace(groups={f"curfew-user-{user.pk}": {}, "curfew-session-ab": {}})
    watcher = watch.Watcher(loop=None, layer=layer)  # type: ignore[arg-type]
    watcher.poll(notify=False)
    for someone in (user, other_user):
        written_elsewhere(someone)
    assert watcher.poll(notify=True) == {user.pk}, "only users with a capsule here"
