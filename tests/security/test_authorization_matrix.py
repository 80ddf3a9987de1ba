"""Who may do what: every route × every kind of caller, from one table.

Each row names a route and the callers allowed through it; every other caller
must be refused in that door's way (401/403, a redirect to sign-in, a 404 for
someone else's object, or close code 4401/4403 for the socket). An allowed
caller must get past authentication (a 2xx, or a door-specific answer that is
not a refusal, such as a 400 for the empty body the matrix sends, or a 502
because the matrix points the proxy at no upstream) and must act on its *own*
user only. The cells are derived from the table, so adding a route to the
project without a row here fails ``test_every_route_is_in_the_matrix``.
"""

from __future__ import annotations

import json
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from curfew_core.models import ApiToken, Schedule
from curfew_core.services.stored_responses import stored_response_record
from curfew_core.services.teams import team_create, team_token_create
from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client

#: The default schedule's zone.
SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")

ANONYMOUS = "anonymous"
GARBAGE = "garbage token"
OWN_API = "own API token"
OWN_EMBED = "own embed token"
OTHER_API = "other user's API token"
REVOKED = "revoked token"
DEACTIVATED = "deactivated user's token"
OWN_SESSION = "own session"
OTHER_SESSION = "other session"
STAFF = "staff session"
#: The key of ada's team (issue 26): it asks on behalf of a member it names.
TEAM_KEY = "team key of ada's team"
PRINCIPALS = (
    TEAM_KEY,
    ANONYMOUS,
    GARBAGE,
    OWN_API,
    OWN_EMBED,
    OTHER_API,
    REVOKED,
    DEACTIVATED,
    OWN_SESSION,
    OTHER_SESSION,
    STAFF,
)
TOKENS = {GARBAGE, OWN_API, OWN_EMBED, OTHER_API, REVOKED, DEACTIVATED, TEAM_KEY}
SESSIONS = {OWN_SESSION, OTHER_SESSION, STAFF}
#: Any signed-in person may use the pages; they act on their own account.
ANY_SESSION = frozenset(SESSIONS)
#: A live API token of an active user (it acts on its own user).
LIVE_API = frozenset({OWN_API, OTHER_API})
#: The gateway's doors (verdict, state, the change stream, the proxy) also
#: take the team key; naming no member (as the matrix sends) it gets a 400
#: saying how, past authentication (the change stream: every member's).
GATEWAY = LIVE_API | {TEAM_KEY}
#: A gateway's door to one of ada's own objects: her token, or the team key.
ADA_GATEWAY = frozenset({OWN_API, TEAM_KEY})


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    allowed: frozenset[str]
    #: Token principals send the token in ``?token=`` instead of a header.
    token_in_query: bool = False
    body: dict[str, Any] | None = None
    #: The path names one of ada's own objects: only ada (and nobody else) may act.
    owned_by_ada: bool = False
    form: bool = False
    tags: tuple[str, ...] = field(default=())
    #: Settings the call runs under (a feature the operator turns on).
    settings: tuple[tuple[str, Any], ...] = ()


#: One decision a gateway reports (the matrix sends it as every caller).
REPORT = {
    "decisions": [
        {"id": "m-1", "at": "2026-09-29T23:30:00+08:00", "state": "winding", "action": "pass"}
    ]
}
SIGNUP_ON = (("CURFEW_SIGNUP", True),)
RESET_ON = (("CURFEW_PASSWORD_RESET", True),)

# ``{own_token_id}`` / ``{own_embed_id}`` are filled with ada's objects' ids.
#: No Gemini upstream listens here: a call past authentication gets a 502.
NO_GEMINI = (("CURFEW_GEMINI_UPSTREAM_BASE_URL", "http://127.0.0.1:9"),)

ROUTES: tuple[Route, ...] = (
    # The JSON API: API tokens only.
    Route("POST", "/api/v1/verdict", GATEWAY, body={}),
    Route("GET", "/api/v1/schedule", LIVE_API),
    Route("PATCH", "/api/v1/schedule", LIVE_API, body={"dry_run": True}),
    Route("POST", "/api/v1/overrides", LIVE_API, body={"overtime": "30m"}),
    Route("GET", "/api/v1/state", GATEWAY),
    Route("GET", "/api/v1/changes", GATEWAY),
    # The team API: ada's own token (she is the team's admin) and the team key
    # read; only an admin's own token changes it; grace is in no team (404).
    Route("GET", "/api/v1/team/schedule", frozenset({OWN_API, TEAM_KEY})),
    Route("PATCH", "/api/v1/team/schedule", frozenset({OWN_API}), body={"dry_run": True}),
    Route("GET", "/api/v1/team/members", frozenset({OWN_API, TEAM_KEY})),
    # Release night: only an admin's own token (the team key asks, it never acts).
    Route("POST", "/api/v1/team/overtime", frozenset({OWN_API}), body={"minutes": 30}),
    Route("GET", "/api/v1/openapi.json", frozenset(PRINCIPALS)),
    # The team key reads and reports for a member it names (the matrix names
    # none: a 400 saying how, past authentication).
    Route("GET", "/api/v1/decisions", GATEWAY),
    Route("POST", "/api/v1/decisions", GATEWAY, body=REPORT),
    Route("GET", "/api/v1/savings", LIVE_API),
    # The proxy: API tokens only.
    Route("POST", "/v1/chat/completions", GATEWAY, body={"model": "m", "messages": []}),
    Route("GET", "/v1/models", GATEWAY),
    Route("GET", "/v1/models/deepseek-chat", GATEWAY),
    Route("POST", "/v1/responses", GATEWAY, body={"model": "m", "input": "hi"}),
    # A stored response is its maker's (ada's resp_123): anyone else's is
    # the upstream's "no such id", a 404; the team key names no member (400).
    Route("GET", "/v1/responses/resp_123", ADA_GATEWAY, owned_by_ada=True),
    Route("DELETE", "/v1/responses/resp_123", ADA_GATEWAY, owned_by_ada=True),
    Route("POST", "/v1/embeddings", GATEWAY, body={"model": "m", "input": "hi"}),
    Route("POST", "/v1/completions", GATEWAY, body={"model": "m", "prompt": "hi"}),
    # Anthropic's door takes the same API tokens (as a Bearer here, x-api-key elsewhere).
    Route("POST", "/v1/messages", GATEWAY, body={"model": "m", "max_tokens": 8, "messages": []}),
    Route("POST", "/v1/messages/count_tokens", GATEWAY, body={"model": "m", "messages": []}),
    # Gemini's door too (as a Bearer here, x-goog-api-key elsewhere), its
    # upstream where none listens.
    *(
        Route(
            "POST", f"/v1beta/models/m:{method}", GATEWAY, body={"contents": []}, settings=NO_GEMINI
        )
        for method in ("generateContent", "streamGenerateContent")
    ),
    # The settings site's sections and their forms: a signed-in person, acting
    # on their own account.
    Route("GET", "/", ANY_SESSION),
    Route("GET", "/schedule/", ANY_SESSION),
    Route("POST", "/schedule/", ANY_SESSION, form=True),
    Route("POST", "/schedule/preview/", ANY_SESSION, form=True),
    Route("GET", "/replies/", ANY_SESSION),
    Route("POST", "/replies/", ANY_SESSION, form=True),
    Route("GET", "/integrations/", ANY_SESSION),
    Route("GET", "/activity/", ANY_SESSION),
    Route("GET", "/activity/decisions.csv", ANY_SESSION),
    Route(
        "POST",
        "/activity/prices/",
        ANY_SESSION,
        body={
            "input_per_million": "0.3",
            "output_per_million": "1.2",
            "currency": "USD",
            "discount_windows": "10:00-01:00",
            "discount_percent": "50",
        },
        form=True,
    ),
    Route("POST", "/overrides/", ANY_SESSION, body={"action": "auto"}, form=True),
    Route("POST", "/tokens/", ANY_SESSION, body={"name": "m", "kind": "api"}, form=True),
    # Unconfirmed, it only asks; confirmed (as here), it revokes.
    Route(
        "POST",
        "/tokens/{own_token_id}/revoke/",
        frozenset({OWN_SESSION}),
        body={"confirm": "1"},
        form=True,
        owned_by_ada=True,
    ),
    Route("GET", "/decision/", ANY_SESSION),
    # The capsule's HTTP side.
    Route("GET", "/embed/", ANY_SESSION),
    Route("GET", "/embed/state", frozenset({OWN_EMBED, *SESSIONS}), token_in_query=True),
    Route("GET", "/embed/capsule/", frozenset({OWN_EMBED}), token_in_query=True),
    Route("POST", "/embed/tokens/", ANY_SESSION, body={"name": "m"}, form=True),
    Route(
        "POST",
        "/embed/tokens/{own_embed_id}/revoke",
        frozenset({OWN_SESSION}),
        form=True,
        owned_by_ada=True,
    ),
    # The Account section: a signed-in person, acting on their own account.
    Route("GET", "/account/", ANY_SESSION),
    Route("POST", "/account/password/", ANY_SESSION, form=True),
    Route("POST", "/account/sessions/", ANY_SESSION, form=True),
    Route("POST", "/account/language/", ANY_SESSION, body={"language": "en"}, form=True),
    Route("POST", "/account/timezone/", ANY_SESSION, form=True),
    # Sign-up and password reset: nobody while off (404), everybody while on
    # (a signed-in person is sent on to the settings page).
    *(
        Route(method, path, frozenset(), form=method == "POST")
        for method, path in (
            ("GET", "/account/signup/"),
            ("POST", "/account/signup/"),
            ("GET", "/account/reset/"),
            ("POST", "/account/reset/"),
            ("GET", "/account/reset/done/"),
            ("GET", "/account/reset/MQ/set-password/"),
            ("GET", "/account/reset/complete/"),
        )
    ),
    Route("GET", "/account/signup/", frozenset(PRINCIPALS), settings=SIGNUP_ON),
    Route("POST", "/account/signup/", frozenset(PRINCIPALS), form=True, settings=SIGNUP_ON),
    Route("GET", "/account/reset/", frozenset(PRINCIPALS), settings=RESET_ON),
    Route(
        "POST",
        "/account/reset/",
        frozenset(PRINCIPALS),
        body={"email": "x"},
        form=True,
        settings=RESET_ON,
    ),
    Route("GET", "/account/reset/done/", frozenset(PRINCIPALS), settings=RESET_ON),
    Route("GET", "/account/reset/MQ/set-password/", frozenset(PRINCIPALS), settings=RESET_ON),
    Route("GET", "/account/reset/complete/", frozenset(PRINCIPALS), settings=RESET_ON),
    # The admin: staff only.
    # The Team page (issue 26): ada's session (she is the team's admin); anyone
    # else signed in gets a 404, as for a team that does not exist.
    Route("GET", "/team/", frozenset({OWN_SESSION})),
    Route("GET", "/team/schedule/", frozenset({OWN_SESSION})),
    Route("POST", "/team/schedule/", frozenset({OWN_SESSION}), form=True),
    Route("POST", "/team/schedule/preview/", frozenset({OWN_SESSION}), form=True),
    Route("POST", "/team/rules/", frozenset({OWN_SESSION}), form=True),
    Route("POST", "/team/overtime/", frozenset({OWN_SESSION}), form=True),
    Route("POST", "/team/invite/", frozenset({OWN_SESSION}), form=True),
    Route("POST", "/team/invite/link/", frozenset({OWN_SESSION}), form=True, settings=SIGNUP_ON),
    Route("POST", "/team/leave/", frozenset({OWN_SESSION}), form=True),
    Route("GET", "/admin/", frozenset({STAFF})),
    Route("GET", "/admin/curfew_core/schedule/", frozenset({STAFF})),
    Route("GET", "/admin/auth/user/", frozenset({STAFF})),
)

#: Route patterns the matrix covers by the rows above (or that are public by design).
COVERED_PATTERNS = {
    "",
    "schedule/",
    "schedule/preview/",
    "replies/",
    "integrations/",
    "activity/",
    "activity/decisions.csv",  # the ledger's export: own decisions only
    "activity/prices/",
    "overrides/",
    "tokens/",
    "tokens/<int:token_id>/revoke/",
    "decision/",
    "login/",  # public by design
    "admin/login/",  # public by design: the admin's sign-in (issue 41: its 429)
    "logout/",  # POST, ends one's own session
    "i18n/",  # language switch, public by design
    "embed/",
    "embed/capsule/",
    "embed/state",
    "embed/tokens/",
    "embed/tokens/<int:token_id>/revoke",
    "favicon.ico",  # public by design: a redirect to the static icon
    "account/",
    "account/password/",
    "account/sessions/",
    "account/language/",
    "account/timezone/",
    "account/signup/",  # public by design when on, a 404 when off
    "account/reset/",
    "account/reset/done/",
    "account/reset/<uidb64>/<token>/",
    "account/reset/complete/",
    "healthz",  # public probes
    "readyz",
    "admin/",
    "team/",
    "team/schedule/",
    "team/schedule/preview/",
    "team/rules/",
    "team/overtime/",
    "team/invite/",
    "team/invite/link/",
    "team/leave/",
    # Routes naming one object (a member, an invite, a link's secret): each
    # refusal with its control is in tests/web/test_team_page.py (a stranger
    # and another team's admin get a 404, a member a 403).
    "team/members/<int:user_id>/role/",
    "team/members/<int:user_id>/remove/",
    "team/invite/<int:invite_id>/revoke/",
    "team/join/<str:raw>/",
}


def _patterns(resolver: URLResolver, prefix: str = "") -> Iterator[str]:
    for entry in resolver.url_patterns:
        text = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if text in {"admin/", "i18n/"}:
                yield text
                continue
            yield from _patterns(entry, text)
        elif isinstance(entry, URLPattern):
            yield text


def test_every_route_is_in_the_matrix() -> None:
    found = set(_patterns(get_resolver()))
    # Static files under debug are served by whitenoise, not a URL pattern.
    missing = found - COVERED_PATTERNS
    assert not missing, f"routes without a row in the authorization matrix: {sorted(missing)}"


def test_every_edge_route_and_method_is_in_the_matrix() -> None:
    """The edge's routes are not Django's: each (method, route) of the door
    table needs a row whose path the table routes to it."""
    from curfew_core.edge.doors import DOORS

    covered = set()
    for row in ROUTES:
        door = DOORS.door_for(row.path)
        found = door.match(row.path)
        if found is not None and found[0].methods:
            covered.add((row.method, found[0].handler, found[0].path))
    wanted = {
        (method, route.handler, route.path)
        for door in DOORS.doors
        for route in door.routes
        for method in route.methods
    }
    assert wanted - covered == set(), "edge routes without a row in the authorization matrix"


@dataclass
class World:
    ada: User
    grace: User
    staff: User
    tokens: dict[str, str]
    own_token_id: int
    own_embed_id: int


@pytest.fixture
def world() -> World:
    """Ada, the others and their tokens: made in each test's own database
    (the test's marker says which: the HTTP cells roll back a transaction,
    the socket's consumers read from another thread, so commit)."""
    ada = User.objects.create_user("ada", password="correct horse battery")
    grace = User.objects.create_user("grace", password="correct horse battery")
    ivy = User.objects.create_user("ivy", password="correct horse battery")
    staff = User.objects.create_superuser("root", password="correct horse battery")
    _, own_api = token_create(user=ada, name="own")
    own_embed_row, own_embed = token_create(user=ada, name="embed", kind=ApiToken.Kind.EMBED)
    _, other_api = token_create(user=grace, name="other")
    revoked_row, revoked = token_create(user=ada, name="revoked")
    token_revoke(user=ada, token_id=revoked_row.pk)
    _, deactivated = token_create(user=ivy, name="ivy")
    ivy.is_active = False
    ivy.save()
    # A token whose revoke route the matrix exercises (not the one it authenticates with).
    target_row, _ = token_create(user=ada, name="target")
    team = team_create(name="lab", admin=ada)
    _, team_key = team_token_create(team=team)
    # A response ada made through the proxy.
    stored_response_record(response_id="resp_123", user_id=ada.pk, at=timezone.now())
    return World(
        ada=ada,
        grace=grace,
        staff=staff,
        tokens={
            GARBAGE: "cfw_" + "x" * 40,
            OWN_API: own_api,
            OWN_EMBED: own_embed,
            OTHER_API: other_api,
            REVOKED: revoked,
            DEACTIVATED: deactivated,
            TEAM_KEY: team_key,
        },
        own_token_id=target_row.pk,
        own_embed_id=own_embed_row.pk,
    )


def _client(world: World, principal: str) -> Client:
    client = Client()
    if principal == OWN_SESSION:
        client.force_login(world.ada)
    elif principal == OTHER_SESSION:
        client.force_login(world.grace)
    elif principal == STAFF:
        client.force_login(world.staff)
    return client


def _call(world: World, route: Route, principal: str) -> Any:
    with override_settings(**dict(route.settings)):
        return _call_as_set(world, route, principal)


def _call_as_set(world: World, route: Route, principal: str) -> Any:
    client = _client(world, principal)
    path = route.path.format(own_token_id=world.own_token_id, own_embed_id=world.own_embed_id)
    headers: dict[str, str] = {}
    if principal in TOKENS:
        token = world.tokens[principal]
        if route.token_in_query:
            path = f"{path}?{urlencode({'token': token})}"
        else:
            headers["Authorization"] = f"Bearer {token}"
    if route.method == "GET":
        return client.get(path, headers=headers)
    if route.form:
        return client.post(path, route.body or {}, headers=headers)
    data = json.dumps(route.body or {})
    return client.generic(
        route.method, path, data, content_type="application/json", headers=headers
    )


def _refused(response: Any) -> bool:
    if response.status_code in (401, 403, 404):
        return True
    location = response.get("Location", "") if response.status_code == 302 else ""
    return "/login/" in location


def _state_of_ada(world: World) -> tuple[Any, ...]:
    row = Schedule.objects.filter(user=world.ada).values_list("config", "version").first()
    tokens = tuple(
        ApiToken.objects.filter(user=world.ada)
        .order_by("pk")
        .values_list("pk", "name", "revoked_at")
    )
    return (row, tokens)


CELLS = [
    pytest.param(
        route,
        principal,
        id=f"{route.method} {route.path}{' (on)' if route.settings else ''} × {principal}",
    )
    for route in ROUTES
    for principal in PRINCIPALS
]


@override_settings(
    # No upstream listens here: a proxied call that passes authentication gets a
    # 502, never a real provider.
    CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1",
    CURFEW_UPSTREAM_TIMEOUT=2,
)
@pytest.mark.parametrize(("route", "principal"), CELLS)
# In a transaction rolled back after each cell, not a flushed database: the
# in-process client answers on this thread, so it sees the cell's rows, and
# its ~800 cells each took a flush of every table (a sixth of the suite's
# time on PostgreSQL). A cell is one request: nothing it asks waits for a commit.
@pytest.mark.django_db
def test_only_allowed_callers_get_through(
    world: World, route: Route, principal: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An on-duty evening of today: off duty the proxy answers 503 by design
    # (embeddings at night), which this matrix is not about.
    evening = datetime.now(SHANGHAI).replace(hour=19, minute=30, second=0, microsecond=0)
    monkeypatch.setattr(timezone, "now", lambda: evening.astimezone(UTC))
    before = _state_of_ada(world)
    response = _call(world, route, principal)
    allowed = principal in route.allowed
    assert response.status_code < 500 or response.status_code == 502, (
        f"{principal} on {route.method} {route.path}: {response.status_code}"
    )
    if allowed:
        assert not _refused(response), (
            f"{principal} should get through {route.method} {route.path}, "
            f"got {response.status_code}"
        )
    else:
        assert _refused(response), (
            f"{principal} must be refused on {route.method} {route.path}, "
            f"got {response.status_code}"
        )
    # Nobody but ada herself changes ada's schedule or tokens.
    if principal not in {OWN_API, OWN_SESSION}:
        assert _state_of_ada(world) == before, f"{principal} changed ada's data"


# -- the WebSocket ---------------------------------------------------------------

ALLOWED_ORIGIN = "http://127.0.0.1:8000"
SOCKET_ALLOWED = frozenset({OWN_EMBED, *SESSIONS})


def _socket(world: World, principal: str) -> WebsocketCommunicator:
    from curfew_site.asgi import application

    headers: list[tuple[bytes, bytes]] = [
        (b"origin", ALLOWED_ORIGIN.encode()),
        (b"host", b"127.0.0.1:8000"),
    ]
    path = "/ws/capsule/"
    if principal in TOKENS:
        path = f"{path}?{urlencode({'token': world.tokens[principal]})}"
    elif principal in SESSIONS:
        client = _client(world, principal)
        name = settings.SESSION_COOKIE_NAME
        headers.append((b"cookie", f"{name}={client.cookies[name].value}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.django_db(transaction=True)
async def test_only_allowed_callers_open_the_capsule_socket(world: World, principal: str) -> None:
    from asgiref.sync import sync_to_async

    comm = await sync_to_async(_socket)(world, principal)
    connected, _ = await comm.connect(timeout=5)
    assert connected, "refusals are accepted first so the browser can read the close code"
    message = await comm.receive_output(timeout=5)
    if principal in SOCKET_ALLOWED:
        assert message["type"] == "websocket.send", message
        state = json.loads(message["text"])
        assert "state" in state
    else:
        assert message["type"] == "websocket.close", message
        assert message["code"] in (4401, 4403), message
    await comm.disconnect()
