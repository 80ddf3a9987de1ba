"""A renamed team member, told to the team key's change stream.

A gateway with a team key keeps verdicts per member name and drops one
member's when the stream names them (``change`` with ``{"user": name}``).
A rename changes which name the team key finds the member by: the old
name's entries must go at once, or the gateway serves them until
``valid_until`` (up to a day), to the renamed member and to whoever takes
that name in the team next. A person alone asks by their own token, whose
verdict a rename does not change: their stream is told nothing.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.realtime import changes
from curfew_core.services.teams import member_add, team_create, team_token_create
from curfew_core.services.tokens import token_create
from tests.realtime.test_changes_stream import (
    Stream,
    _streams_closed,
    each_layer,
    fresh_layer,
    open_stream,
)

__all__ = ["_streams_closed", "each_layer", "fresh_layer"]
db = sync_to_async

#: Far under a verdict's ``max_age`` (about a minute), and many heartbeats.
WAIT = 3.0


async def _events_within(stream: Stream, seconds: float) -> list[tuple[str, object]]:
    """The events the stream sent within ``seconds`` (heartbeats left out)."""
    seen: list[tuple[str, object]] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while (left := end - loop.time()) > 0:
        try:
            chunk = await asyncio.wait_for(stream.chunk(), left)
        except TimeoutError:
            break
        for block in chunk.decode().split("\n\n"):
            lines = dict(
                line.split(": ", 1)
                for line in block.splitlines()
                if line.startswith("event: ") or line.startswith("data: ")
            )
            if "event" in lines:
                seen.append((lines["event"], json.loads(lines.get("data", "null"))))
    return seen


async def ready_stream(token: str) -> Stream:
    """``token``'s change stream, opened and past its ``ready`` event."""
    stream = open_stream(token)
    assert (await stream.start())["status"] == 200
    assert (await stream.chunk()).startswith(b"event: ready")
    return stream


def _team() -> tuple[User, str]:
    boss, alice = (User.objects.create_user(name) for name in ("boss", "alice"))
    acme = team_create(name="acme", admin=boss)
    member_add(team=acme, user=alice)
    return alice, team_token_create(team=acme)[1]


def _rename(user: User, name: str) -> None:
    user.username = name
    user.save()


@pytest.mark.usefixtures("each_layer", "transactional_db")
async def test_a_renamed_member_is_named_on_the_team_keys_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    alice, key = await db(_team)()
    stream = await ready_stream(key)

    await db(_rename)(alice, "alicia")

    told = await _events_within(stream, WAIT)
    named = {data["user"] for name, data in told if name == "change" and isinstance(data, dict)}
    # The old name's verdicts go; the new name's too (in case a gateway
    # kept one for a previous holder of that name).
    assert named == {"alice", "alicia"}, told
    await stream.close()


@pytest.mark.usefixtures("fresh_layer", "transactional_db")
async def test_a_save_that_keeps_the_name_tells_the_team_key_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: a member's save that renames nobody (an e-mail) is no change."""
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    alice, key = await db(_team)()
    stream = await ready_stream(key)
    alice.email = "alice@example.com"
    await db(alice.save)()
    assert await _events_within(stream, 1.0) == []
    await stream.close()


@pytest.mark.usefixtures("fresh_layer", "transactional_db")
async def test_a_person_alone_renamed_hears_nothing_on_their_own_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Their token's verdict does not depend on their name: nothing to drop."""
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    ada = await db(User.objects.create_user)("ada")
    _, raw = await db(token_create)(user=ada, name="gateway")
    stream = await ready_stream(raw)
    await db(_rename)(ada, "ada-lovelace")
    assert await _events_within(stream, 1.0) == []
    await stream.close()
