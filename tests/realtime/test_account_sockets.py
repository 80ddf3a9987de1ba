"""The Account section ends sessions, and their capsule sockets with them (4401).

"Sign out other sessions" closes the sockets of every other session of the
person at once (no push needed), and keeps this browser's; a password change
made on the page ends the other sessions' sockets through Django's session
hash, and this browser stays signed in.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User

from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED
from curfew_core.services.schedules import schedule_update
from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import closed, embed_token, next_state, open_live, socket

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async
PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new passphrase 42"


def signed_in(user: User) -> tuple[Client, str]:
    client = Client()
    client.force_login(user)
    return client, cookie_of(client)


def cookie_of(client: Client) -> str:
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


async def test_sign_out_other_sessions_closes_their_sockets_only(
    user: User, other_user: User, frozen: None
) -> None:
    here, here_cookie = await db(signed_in)(user)
    _, phone_cookie = await db(signed_in)(user)
    _, laptop_cookie = await db(signed_in)(user)
    _, bystander_cookie = await db(signed_in)(other_user)
    mine = socket(cookie=here_cookie)
    phone = socket(cookie=phone_cookie)
    laptop = socket(cookie=laptop_cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(cookie=bystander_cookie)
    for comm in (mine, phone, laptop, by_token, bystander):
        await open_live(comm)

    response = await db(here.post)("/account/sessions/")
    assert response.status_code == 302

    # At once, without any push: the ended sessions' sockets close.
    for comm in (phone, laptop):
        code, reason = await closed(comm)
        assert code == CLOSE_UNAUTHORIZED
        assert reason == "signed out"
    # This browser's socket, the embed token's and another person's keep listening.
    await db(schedule_update)(user=user, changes={"timezone": "Europe/Berlin"}, source="test")
    for comm in (mine, by_token):
        assert (await next_state(comm))["timezone"] == "Europe/Berlin"
    assert await bystander.receive_nothing(timeout=0.3)
    assert (await db(here.get)("/account/")).status_code == 200, "this session survives"
    for comm in (phone, laptop):
        assert await comm.receive_nothing(timeout=0.2), "nothing after the close"
    for comm in (mine, by_token, bystander):
        await comm.disconnect()


async def test_password_change_on_the_page_closes_the_other_sessions_sockets(
    user: User, other_user: User, frozen: None
) -> None:
    here, _ = await db(signed_in)(user)
    _, phone_cookie = await db(signed_in)(user)
    _, bystander_cookie = await db(signed_in)(other_user)
    phone = socket(cookie=phone_cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(cookie=bystander_cookie)
    for comm in (phone, by_token, bystander):
        await open_live(comm)

    response = await db(here.post)(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302

    code, reason = await closed(phone)
    assert code == CLOSE_UNAUTHORIZED
    assert reason == "signed out"
    # This browser stays signed in (with a new session key) and its capsule opens.
    assert (await db(here.get)("/account/")).status_code == 200
    mine = socket(cookie=await db(cookie_of)(here))
    await open_live(mine)
    await next_state(by_token)  # re-checked after the user was saved: still allowed
    assert await bystander.receive_nothing(timeout=0.3)
    for comm in (mine, by_token, bystander):
        await comm.disconnect()
