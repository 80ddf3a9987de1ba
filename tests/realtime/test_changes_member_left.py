"""A member who leaves the team, told to the team key's change stream.

A gateway with a team key keeps verdicts per member name until
``valid_until`` while its stream is live. A member removed (or leaving) is no
member any more: unless the stream names them, the gateway keeps answering
for them with the team key for up to a day.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.models import Team
from curfew_core.realtime import changes
from curfew_core.services.teams import member_remove
from tests.realtime.test_changes_rename import WAIT, _events_within, _team, ready_stream
from tests.realtime.test_changes_stream import (
    _streams_closed,
    each_layer,
    fresh_layer,
)

__all__ = ["_streams_closed", "each_layer", "fresh_layer"]
db = sync_to_async


def _removed(alice: User) -> None:
    boss = User.objects.get(username="boss")
    member_remove(team=Team.objects.get(name="acme"), user=alice, actor=boss)


@pytest.mark.usefixtures("each_layer", "transactional_db")
async def test_a_member_who_left_is_named_on_the_team_keys_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    alice, key = await db(_team)()
    stream = await ready_stream(key)

    await db(_removed)(alice)

    told = await _events_within(stream, WAIT)
    assert ("change", {"user": "alice"}) in told, told
    await stream.close()


@pytest.mark.usefixtures("fresh_layer", "transactional_db")
async def test_a_member_deleted_is_named_on_the_team_keys_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Their membership goes with them (a cascade): their name is read before
    the delete, since after the commit there is no user to read it from."""
    monkeypatch.setattr(changes, "HEARTBEAT_SECONDS", 0.2)
    alice, key = await db(_team)()
    stream = await ready_stream(key)

    await db(alice.delete)()

    told = await _events_within(stream, WAIT)
    assert ("change", {"user": "alice"}) in told, told
    await stream.close()
