"""The Team page's socket (``/ws/team/``): an admin's page hears when a shown
member or the team's schedule changes; nobody else opens one."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from curfew_core.models import Team
from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED
from curfew_core.realtime.team import CLOSE_NOT_ADMIN
from curfew_core.services import teams as team_services
from curfew_core.services.schedules import schedule_update
from tests.realtime.conftest import ALLOWED_ORIGIN, HOST, embed_token, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """The in-memory layer's queues belong to one event loop; each test has its own."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def team_socket(*, cookie: str | None = None, query: str = "") -> WebsocketCommunicator:
    from curfew_site.asgi import application

    headers = [(b"host", HOST.encode()), (b"origin", ALLOWED_ORIGIN.encode())]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, f"/ws/team/{query}", headers=headers)


async def refusal(comm: WebsocketCommunicator) -> int:
    connected, _ = await comm.connect(timeout=15)
    assert connected, "refusals are accepted first so the page can read the code"
    message = await comm.receive_output(timeout=15)
    assert message["type"] == "websocket.close", message
    code: int = message["code"]
    return code


def _team(admin: User, *members: User) -> Team:
    team: Team = team_services.team_create(name="owls", admin=admin)
    for person in members:
        team_services.member_add(team=team, user=person)
    return team


async def test_an_admins_socket_hears_a_member_and_the_team_change(
    user: User, other_user: User
) -> None:
    outsider = await db(User.objects.create_user)("eve")
    team = await db(_team)(user, other_user)
    comm = team_socket(cookie=await db(session_cookie)(user))
    connected, _ = await comm.connect(timeout=15)
    assert connected
    assert await comm.receive_nothing(timeout=0.3), "nothing is sent until something changes"
    # Control: someone outside the team changes; the page hears nothing.
    await db(schedule_update)(user=outsider, changes={"curfew_start": "22:00"}, source="test")
    assert await comm.receive_nothing(timeout=0.6)
    # A member's own change, then the team's: each is heard.
    await db(schedule_update)(user=other_user, changes={"curfew_start": "22:00"}, source="test")
    assert json.loads(await comm.receive_from(timeout=10)) == {"changed": True}
    await db(team_services.team_schedule_update)(team=team, changes={"curfew_start": "21:00"})
    assert json.loads(await comm.receive_from(timeout=10)) == {"changed": True}
    await comm.disconnect()


async def test_a_member_a_stranger_and_a_token_open_no_team_socket(
    user: User, other_user: User
) -> None:
    await db(_team)(user, other_user)
    stranger = await db(User.objects.create_user)("eve")
    assert await refusal(team_socket(cookie=await db(session_cookie)(other_user))) == (
        CLOSE_NOT_ADMIN
    )
    assert await refusal(team_socket(cookie=await db(session_cookie)(stranger))) == (
        CLOSE_NOT_ADMIN
    )
    assert await refusal(team_socket()) == CLOSE_UNAUTHORIZED
    token = await db(embed_token)(user)
    assert await refusal(team_socket(query=f"?token={token}")) == CLOSE_UNAUTHORIZED
