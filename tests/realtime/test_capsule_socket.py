"""The capsule socket on the real ASGI app: auth, origin, pushes, timers, isolation."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.realtime import clock, consumers, timers
from curfew_core.realtime.codes import (
    CLOSE_FORBIDDEN_ORIGIN,
    CLOSE_UNAUTHORIZED,
    CLOSE_UNAVAILABLE,
)
from curfew_core.schedules.override_commands import from_json
from curfew_core.selectors.verdicts import CAPSULE_WORDS, capsule_payload, state_payload
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create, token_revoke
from tests.realtime.conftest import (
    FOREIGN_ORIGIN,
    embed_token,
    local,
    next_state,
    open_live,
    refusal,
    session_cookie,
    socket,
)

pytestmark = pytest.mark.django_db(transaction=True)

db = sync_to_async


def save(user: User, **changes: Any) -> None:
    schedule_update(user=user, changes=changes, source="test")


def override(user: User, body: dict[str, Any]) -> None:
    override_apply(user=user, command=from_json(body), now=clock.now())


# -- state on connect ---------------------------------------------------------------


async def test_session_socket_sends_the_api_state_on_connect(user, api, set_clock):
    now = set_clock(local("2026-09-29 10:00"))()  # a Tuesday in peak hours
    cookie = await db(session_cookie)(user)
    comm = socket(cookie=cookie)
    payload = await open_live(comm)
    assert payload == await db(lambda: capsule_payload(user_id=user.pk, now=now))()
    assert payload["state"] == "off-duty"
    api_state = (await db(api.get)("/api/v1/state")).json()
    assert set(payload) == set(api_state) | CAPSULE_WORDS, (
        "the socket speaks the API's state fields, plus the words the capsule shows"
    )
    state = await db(lambda: state_payload(user_id=user.pk, now=now))()
    assert {k: v for k, v in payload.items() if k not in CAPSULE_WORDS} == state
    await comm.disconnect()


async def test_embed_token_socket_gets_its_users_state_from_any_origin(user, set_clock):
    set_clock(local("2026-09-29 20:00"))
    await db(save)(user, timezone="Europe/Berlin")
    raw = await db(embed_token)(user)
    for origin in (FOREIGN_ORIGIN, "null", None):  # another site, a sandboxed frame, no browser
        comm = socket(token=raw, origin=origin)
        payload = await open_live(comm)
        assert payload["timezone"] == "Europe/Berlin"
        await comm.disconnect()


# -- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [FOREIGN_ORIGIN, "null", "http://127.0.0.1.evil.example", "http://localhost:9999", None],
)
async def test_session_socket_from_a_foreign_origin_is_refused_4403(user, origin):
    cookie = await db(session_cookie)(user)
    code, reason = await refusal(socket(cookie=cookie, origin=origin))
    assert code == CLOSE_FORBIDDEN_ORIGIN
    assert "origin" in reason


async def test_a_refused_origin_takes_no_channel_of_the_layer(user, in_memory_layer, monkeypatch):
    """With Redis a channel is a blocking receive for as long as the client stays."""
    from channels.layers import InMemoryChannelLayer

    made: list[str] = []
    real = InMemoryChannelLayer.new_channel

    async def counted(self: Any, prefix: str = "specific.") -> str:
        name: str = await real(self, prefix)
        made.append(name)
        return name

    monkeypatch.setattr(InMemoryChannelLayer, "new_channel", counted)
    cookie = await db(session_cookie)(user)
    code, _ = await refusal(socket(cookie=cookie, origin=FOREIGN_ORIGIN))
    assert code == CLOSE_FORBIDDEN_ORIGIN
    assert made == []
    # Control: an accepted socket does make one (the process's hub).
    assert (await open_live(socket(cookie=cookie)))["state"]
    assert len(made) == 1


# The Origin must be the socket's own origin (scheme, host and port), as Django's
# CSRF check compares them, or one listed in CSRF_TRUSTED_ORIGINS.
ORIGIN_MATRIX = [
    # (Host header, Origin header, accepted)
    ("127.0.0.1:8000", "http://127.0.0.1:8000", True),  # same origin
    ("localhost:8000", "http://localhost:8000", True),  # same origin, another allowed host
    ("localhost:8000", "http://localhost:9999", False),  # other port (the reported case)
    ("127.0.0.1:8000", "http://127.0.0.1:9999", False),  # other port
    ("127.0.0.1:8000", "http://127.0.0.1", False),  # default port is another port
    ("127.0.0.1:8000", "https://127.0.0.1:8000", False),  # other scheme
    ("127.0.0.1:8000", "http://localhost:8000", False),  # other host, though allowed
    ("127.0.0.1:8000", "https://evil.example", False),  # other site
    ("127.0.0.1:8000", "null", False),  # sandboxed frame, file://
    ("127.0.0.1:8000", None, False),  # no Origin at all
    ("evil.example:8000", "http://evil.example:8000", False),  # Host not in ALLOWED_HOSTS
    (None, "http://127.0.0.1:8000", False),  # no Host to compare with
]


@pytest.mark.parametrize(("host", "origin", "accepted"), ORIGIN_MATRIX)
async def test_session_socket_origin_matrix(user, host, origin, accepted):
    cookie = await db(session_cookie)(user)
    comm = socket(cookie=cookie, origin=origin, host=host)
    if accepted:
        assert (await open_live(comm))["state"]
        await comm.disconnect()
    else:
        code, reason = await refusal(comm)
        assert code == CLOSE_FORBIDDEN_ORIGIN
        assert "origin" in reason


async def test_a_trusted_origin_may_open_a_session_socket(user, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://dash.example.com"]
    cookie = await db(session_cookie)(user)
    comm = socket(cookie=cookie, origin="https://dash.example.com")
    assert (await open_live(comm))["state"]
    await comm.disconnect()
    # Control: the trust is for exactly that origin.
    code, _ = await refusal(socket(cookie=cookie, origin="http://dash.example.com"))
    assert code == CLOSE_FORBIDDEN_ORIGIN


def handshake(scheme: str, host: str, origin: str, *extra: tuple[bytes, bytes]) -> dict[str, Any]:
    headers = [(b"host", host.encode()), (b"origin", origin.encode()), *extra]
    return {"type": "websocket", "scheme": scheme, "path": "/ws/capsule/", "headers": headers}


def test_a_secure_socket_has_an_https_origin():
    from curfew_core.realtime.guard import same_origin

    assert same_origin(handshake("wss", "127.0.0.1:8000", "https://127.0.0.1:8000"))
    assert not same_origin(handshake("wss", "127.0.0.1:8000", "http://127.0.0.1:8000"))
    assert same_origin(handshake("ws", "127.0.0.1:8000", "http://127.0.0.1:8000"))


def test_behind_a_tls_proxy_the_forwarded_scheme_counts_only_when_trusted(settings):
    from curfew_core.realtime.guard import same_origin

    forwarded = (b"x-forwarded-proto", b"https")
    scope = handshake("ws", "127.0.0.1:8000", "https://127.0.0.1:8000", forwarded)
    settings.SECURE_PROXY_SSL_HEADER = None
    assert not same_origin(scope), "an untrusted X-Forwarded-Proto is ignored"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert same_origin(scope)
    plain = handshake("ws", "127.0.0.1:8000", "http://127.0.0.1:8000", forwarded)
    assert not same_origin(plain), "behind TLS the page's origin is https"


async def test_a_token_parameter_never_lets_a_session_skip_the_origin_check(user):
    """A hostile page adding ?token=junk must not ride on the victim's cookie."""
    cookie = await db(session_cookie)(user)
    code, _ = await refusal(socket(token="junk", cookie=cookie, origin=FOREIGN_ORIGIN))
    assert code == CLOSE_UNAUTHORIZED


async def test_no_credential_is_refused_4401(db):
    code, reason = await refusal(socket())
    assert code == CLOSE_UNAUTHORIZED
    assert "sign in" in reason


@pytest.mark.parametrize("case", ["missing", "unknown", "revoked", "api-kind"])
async def test_bad_embed_tokens_are_refused_4401(user, case):
    def make() -> str:
        if case == "missing":
            return ""
        if case == "unknown":
            return "cfe_not-a-real-token"
        if case == "api-kind":
            return token_create(user=user, name="api", kind=ApiToken.Kind.API)[1]
        token, raw = token_create(user=user, name="old", kind=ApiToken.Kind.EMBED)
        token_revoke(user=user, token_id=token.pk)
        return raw

    raw = await db(make)()
    code, reason = await refusal(socket(token=raw, origin=FOREIGN_ORIGIN))
    assert code == CLOSE_UNAUTHORIZED
    expected = "missing embed token" if case == "missing" else "unknown or revoked embed token"
    assert reason == expected


async def test_revoking_the_embed_token_closes_its_open_capsule(user):
    token, raw = await db(token_create)(user=user, name="dash", kind=ApiToken.Kind.EMBED)
    comm = socket(token=raw)
    await open_live(comm)
    await db(token_revoke)(user=user, token_id=token.pk)
    message = await comm.receive_output(timeout=3)
    assert message["type"] == "websocket.close"
    assert message["code"] == CLOSE_UNAUTHORIZED


# -- pushes ---------------------------------------------------------------------------


async def test_schedule_save_is_pushed(user, set_clock):
    set_clock(local("2026-09-29 20:00"))
    comm = socket(token=await db(embed_token)(user))
    assert (await open_live(comm))["timezone"] == "Asia/Shanghai"
    await db(save)(user, timezone="Europe/Berlin")
    assert (await next_state(comm))["timezone"] == "Europe/Berlin"
    await comm.disconnect()


async def test_override_start_is_pushed_to_session_and_token_capsules(user, set_clock):
    set_clock(local("2026-09-29 23:30"))  # winding
    by_session = socket(cookie=await db(session_cookie)(user))
    by_token = socket(token=await db(embed_token)(user), origin=FOREIGN_ORIGIN)
    for comm in (by_session, by_token):
        assert (await open_live(comm))["state"] == "winding"
    await db(override)(user, {"overtime": "30m"})
    for comm in (by_session, by_token):
        pushed = await next_state(comm)
        assert (pushed["state"], pushed["override"]) == ("on-duty", "overtime")
        assert pushed["schedule_state"] == "winding"
        await comm.disconnect()


async def test_override_expiry_is_pushed_when_it_ends(user, set_clock):
    """Nobody sends anything: the socket's own timer pushes the overtime's end.

    The clock stands 1.5 s before the end until the first state is in, then a
    millisecond before it for longer than the socket's timer (1.5 s of real
    time) takes to come due: a timer set for any earlier instant would push the
    overtime then (never early). Then it stands at the end itself and goes no
    further, so only a timer set for the end can push (never late). A clock
    running from before the setup told the end as the first state when the
    token and the connect took longer than 1.5 s."""
    start = local("2026-09-29 23:30")
    set_clock(start)
    await db(override)(user, {"overtime": "30m"})
    expiry = start + timedelta(minutes=30)
    set_clock(expiry - timedelta(seconds=1.5))
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    assert first["override"] == "overtime"
    assert first["valid_until"] == expiry.isoformat()
    # The timer comes due meanwhile; by the wall clock the overtime goes on.
    set_clock(expiry - timedelta(milliseconds=1))
    assert await comm.receive_nothing(timeout=2)
    set_clock(expiry)
    pushed = await next_state(comm, timeout=4)
    assert pushed["override"] is None
    assert pushed["state"] == "winding"
    await comm.disconnect()


async def test_pretend_end_is_pushed_when_it_ends(user, set_clock):
    """ "Pretend it is ..." ends by itself: the capsule's timer (``valid_until``)
    wakes at the end and pushes the schedule's own state, with no write."""
    start = local("2026-09-29 20:00")  # on duty
    set_clock(start)
    await db(override)(user, {"debug": "01:30", "duration": "15m"})  # winding
    end = start + timedelta(minutes=15)
    # Held 1.5 s before the end through the setup, a millisecond before it
    # through the timer's real 1.5 s (never early), then at the end and no
    # further (never late): see the overtime test above.
    set_clock(end - timedelta(seconds=1.5))
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    assert first["state"] == "winding"
    assert datetime.fromisoformat(first["debug_at"]) == local("2026-09-30 01:30")
    assert first["valid_until"] == end.isoformat()
    set_clock(end - timedelta(milliseconds=1))
    assert await comm.receive_nothing(timeout=2)
    set_clock(end)
    pushed = await next_state(comm, timeout=4)
    assert (pushed["state"], pushed["debug_at"]) == ("on-duty", None)
    await comm.disconnect()


async def test_schedule_boundary_is_pushed_by_the_timer_not_a_poll(user, set_clock, monkeypatch):
    from curfew_core.realtime import states

    reads: list[tuple[datetime, datetime]] = []  # (the instant read for, when it was read)
    real_read = states.read_states

    def counting(asks: list[states.Ask], **kwargs: Any) -> Any:
        reads.extend((kwargs["now"], clock.now()) for _ in asks)
        return real_read(asks, **kwargs)

    monkeypatch.setattr(states, "read_states", counting)
    boundary = local("2026-09-29 12:00")  # Tuesday: the morning peak ends
    # The clock stands 3 s before the boundary through the setup and the connect,
    # then a second before it (no await between: the read ahead is 2 s of real
    # time after the connect), then at the boundary once that read is made. A
    # clock running from before the setup made the first state the boundary's
    # own when the token and the connect took longer than 3 s.
    set_clock(boundary - timedelta(seconds=3))
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    set_clock(boundary - timedelta(seconds=1))
    assert first["state"] == "off-duty"
    assert first["valid_until"] == boundary.isoformat()
    # Control: nothing is sent before the boundary.
    assert await comm.receive_nothing(timeout=0.5)
    for _ in range(250):  # the read ahead, at most 5 s
        if len(reads) == 2:
            break
        await asyncio.sleep(0.02)
    # At the boundary and no further: only a timer set for it can push (never late).
    set_clock(boundary)
    pushed = await next_state(comm, timeout=6)
    assert pushed["state"] == "on-duty"
    assert len(reads) == 2, "one read on connect, one for the boundary: no polling loop"
    (_, connected), (read_for, read_at) = reads
    # The boundary's read is made ahead of it, for it (states.prepare).
    assert read_for == boundary + timers.LATE
    assert connected < read_at < boundary
    await comm.disconnect()


async def test_a_far_boundary_sets_one_timer_and_nothing_wakes_meanwhile(user, set_clock):
    set_clock(local("2026-09-29 19:00"), running=True)  # next change: 23:00
    comm = socket(token=await db(embed_token)(user))
    first = await open_live(comm)
    assert first["valid_until"] == local("2026-09-29 23:00").isoformat()
    assert await comm.receive_nothing(timeout=1.5)
    await comm.disconnect()


async def test_a_state_that_cannot_be_read_closes_1011_so_the_capsule_retries(user, monkeypatch):
    from curfew_core.realtime import states

    raw = await db(embed_token)(user)

    def broken(asks: list[states.Ask], **kwargs: Any) -> Any:
        raise RuntimeError("database is down")

    monkeypatch.setattr(states, "read_states", broken)
    code, reason = await refusal(socket(token=raw))
    assert code == CLOSE_UNAVAILABLE
    assert "retry" in reason


async def test_a_long_open_capsule_renews_its_group_membership(
    user, set_clock, monkeypatch, in_memory_layer
):
    """Channel layers expire group members after a day; the timer renews them.

    The clock stands a second before the boundary until the first state is in,
    then at the boundary: the timer's tick (a second of real time, longer than
    the half second a membership lasts here) comes whatever the setup cost. A
    clock running from before the setup put the boundary behind the first state
    when the token and the connect took longer than that second."""
    from channels.layers import get_channel_layer

    monkeypatch.setattr(consumers, "REJOIN_SECONDS", 0.5)
    boundary = local("2026-09-29 12:00")
    set_clock(boundary - timedelta(seconds=1))
    comm = socket(token=await db(embed_token)(user))
    await open_live(comm)
    members = get_channel_layer().groups[f"curfew-user-{user.pk}"]
    (joined,) = members.values()
    set_clock(boundary)
    await next_state(comm, timeout=4)  # the boundary tick
    (renewed,) = members.values()
    assert renewed > joined
    await comm.disconnect()


# -- isolation --------------------------------------------------------------------------


async def test_one_users_changes_never_reach_another_users_capsule(user, other_user, set_clock):
    set_clock(local("2026-09-29 20:00"))
    ada = socket(token=await db(embed_token)(user), origin=FOREIGN_ORIGIN)
    grace = socket(token=await db(embed_token)(other_user), origin=FOREIGN_ORIGIN)
    await open_live(ada)
    await open_live(grace)

    await db(save)(user, timezone="Europe/Berlin")
    assert (await next_state(ada))["timezone"] == "Europe/Berlin"  # control: the event fired
    assert await grace.receive_nothing(timeout=0.5)

    await db(override)(other_user, {"off": True})
    assert (await next_state(grace))["forced"] is True
    assert await ada.receive_nothing(timeout=0.5)
    for comm in (ada, grace):
        await comm.disconnect()


async def test_disconnect_leaves_the_group_and_cancels_the_timer(user, set_clock, in_memory_layer):
    set_clock(local("2026-09-29 11:59"), running=True)
    comm = socket(token=await db(embed_token)(user))
    await open_live(comm)
    await comm.disconnect()
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    assert not layer.groups.get(f"curfew-user-{user.pk}")
    # The loop holds no pending capsule timer once the socket is gone.
    await asyncio.sleep(0)
    pending = [
        h
        for h in asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
        if not h.cancelled() and "on_timer" in repr(h)
    ]
    assert pending == []
