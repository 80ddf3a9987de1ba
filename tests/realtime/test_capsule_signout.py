"""A signed-in capsule socket ends with its credential (4401, and nothing after).

Sign-out ends that session's sockets; a password change ends the user's other
sessions' sockets; deactivation (a save or a bulk update) ends every socket of
the user. Embed-token sockets of other users never notice.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User

from curfew_core.realtime import access
from curfew_core.realtime.codes import CLOSE_UNAUTHORIZED
from curfew_core.services.schedules import schedule_update
from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import closed, embed_token, next_state, open_live, socket

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


def signed_in(user: User) -> tuple[Client, str]:
    """A browser signed in as ``user``: its client and its cookie header."""
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return client, f"{name}={client.cookies[name].value}"


def save(user: User, **changes: Any) -> None:
    schedule_update(user=user, changes=changes, source="test")


async def test_sign_out_closes_that_sessions_socket(user, other_user, frozen):
    browser, cookie = await db(signed_in)(user)
    _, other_cookie = await db(signed_in)(user)  # the same user signed in elsewhere
    by_session = socket(cookie=cookie)
    elsewhere = socket(cookie=other_cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(token=await db(embed_token)(other_user))
    for comm in (by_session, elsewhere, by_token, bystander):
        await open_live(comm)

    response = await db(browser.post)("/logout/")
    assert response.status_code == 302

    code, reason = await closed(by_session)
    assert code == CLOSE_UNAUTHORIZED
    assert reason == "signed out"
    # Only that session: the same user's other sockets keep listening.
    await db(save)(user, timezone="Europe/Berlin")
    for comm in (elsewhere, by_token):
        assert (await next_state(comm))["timezone"] == "Europe/Berlin"
    assert await by_session.receive_nothing(timeout=0.5), "nothing after the close"
    assert await bystander.receive_nothing(timeout=0.2)
    for comm in (elsewhere, by_token, bystander):
        await comm.disconnect()


async def test_password_change_closes_the_users_session_sockets(user, other_user, frozen):
    _, cookie = await db(signed_in)(user)
    by_session = socket(cookie=cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(token=await db(embed_token)(other_user))
    for comm in (by_session, by_token, bystander):
        await open_live(comm)

    def change_password() -> None:
        fresh = User.objects.get(pk=user.pk)
        fresh.set_password("a brand new passphrase")
        fresh.save()

    await db(change_password)()
    code, reason = await closed(by_session)
    assert code == CLOSE_UNAUTHORIZED
    assert reason == "signed out"
    # An embed token is not a session: the user's own token socket stays open.
    await next_state(by_token)  # it re-checked and is still allowed
    await db(save)(user, timezone="Europe/Berlin")
    assert (await next_state(by_token))["timezone"] == "Europe/Berlin"
    assert await by_session.receive_nothing(timeout=0.3)
    assert await bystander.receive_nothing(timeout=0.2)
    for comm in (by_token, bystander):
        await comm.disconnect()


async def test_deactivation_closes_every_socket_of_the_user(user, other_user, frozen):
    _, cookie = await db(signed_in)(user)
    by_session = socket(cookie=cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(token=await db(embed_token)(other_user))
    for comm in (by_session, by_token, bystander):
        await open_live(comm)

    def deactivate() -> None:
        fresh = User.objects.get(pk=user.pk)
        fresh.is_active = False
        fresh.save()

    await db(deactivate)()
    for comm in (by_session, by_token):
        code, _ = await closed(comm)
        assert code == CLOSE_UNAUTHORIZED
    await db(save)(other_user, timezone="Europe/Berlin")
    assert (await next_state(bystander))["timezone"] == "Europe/Berlin"
    await bystander.disconnect()


async def test_bulk_deactivation_closes_sockets_at_their_next_push(
    user, other_user, frozen, monkeypatch
):
    """``QuerySet.update`` sends no signal: each push re-checks ``is_active``."""
    monkeypatch.setattr(access, "CHECK_SECONDS", 0.0)  # the bound, shrunk to now
    _, cookie = await db(signed_in)(user)
    by_session = socket(cookie=cookie)
    by_token = socket(token=await db(embed_token)(user))
    bystander = socket(token=await db(embed_token)(other_user))
    for comm in (by_session, by_token, bystander):
        await open_live(comm)

    await db(lambda: User.objects.filter(pk=user.pk).update(is_active=False))()
    await db(save)(user, timezone="Europe/Berlin")  # a push for the user's sockets
    for comm in (by_session, by_token):
        code, _ = await closed(comm)
        assert code == CLOSE_UNAUTHORIZED
    assert await bystander.receive_nothing(timeout=0.2)
    await bystander.disconnect()


def test_the_active_check_is_remembered_only_briefly(user, monkeypatch):
    """Cheap (one query per user per bound) and short: a bulk update shows within it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    clock = [1000.0]
    monkeypatch.setattr(access.time, "monotonic", lambda: clock[0])
    access.forget_everything()
    with CaptureQueriesContext(connection) as queries:
        assert access.user_active(user.pk)
        assert access.user_active(user.pk)
    assert len(queries) == 1
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert access.user_active(user.pk), "within the bound the answer stands"
    clock[0] += access.CHECK_SECONDS
    assert not access.user_active(user.pk)
