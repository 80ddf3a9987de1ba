"""One router for ``/api/v1/`` (issue 43): every API route is a row of the door
table, served by the edge's one pipeline.

The door table's promises for it: no path under a token door is Django's
(the table refuses a token door without a fallback); a route says how it takes
a team key, and the token kind it asks for follows; a sync route runs on the
edge's pool, its refusals and failures answered by the edge in the API's shape.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.edge import app as edge_app
from curfew_core.edge import threads
from curfew_core.edge.declare import Door, Route, Table
from curfew_core.edge.dialects import API
from curfew_core.edge.doors import DOORS
from curfew_core.edge.http_headers import bearer_in
from curfew_core.models import ApiToken
from curfew_core.selectors.tokens import GATEWAY
from curfew_core.services.teams import team_create, team_token_create
from curfew_testkit.asgi_client import AsgiClient

pytestmark = pytest.mark.django_db

API_DOOR = DOORS.door_for("/api/v1/")


def test_no_path_under_a_token_door_is_djangos() -> None:
    for door in DOORS.doors:
        if door.credential is not None:
            assert door.fallback is not None, door.name
    for path in ("/api/v1/schedule", "/api/v1/savings", "/api/v1/openapi.json", "/api/v1/x/y"):
        assert API_DOOR.match(path) is not None, path


def test_the_table_refuses_a_token_door_that_leaves_paths_to_django() -> None:
    half = Door("half", "/half/", API, lambda: 1, bearer_in)
    pages = [door for door in DOORS.doors if door.prefix == "/"]
    with pytest.raises(ValueError, match="half"):
        Table((half, *pages))
    fallback = Route("/half/*", (), "curfew_core.api.views.not_found", token=False)
    Table((Door("half", "/half/", API, lambda: 1, bearer_in, fallback=fallback), *pages))


def test_the_token_kind_follows_how_a_route_takes_a_team_key() -> None:
    kinds = {
        route.path.removeprefix("/api/v1/"): route.token_kind
        for route in API_DOOR.routes
        if route.token
    }
    own = ApiToken.Kind.API.value
    assert (kinds["schedule"], kinds["overrides"], kinds["savings"]) == (own, own, own)
    assert {kinds[path] for path in ("verdict", "state", "changes", "decisions")} == {GATEWAY}
    assert {kinds[path] for path in ("team/schedule", "team/members", "team/overtime")} == {GATEWAY}


@pytest.fixture
def team_key() -> tuple[User, str]:
    ada = User.objects.create_user("ada")
    _, raw = team_token_create(team=team_create(name="lab", admin=ada))
    return ada, raw


def _get(raw: str, path: str) -> Any:
    return AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {raw}"}).request("GET", path)


def test_a_team_key_is_taken_as_each_route_says(team_key: tuple[User, str]) -> None:
    _, raw = team_key
    # refused: no token there, and told so (tests/teams/test_wrong_kind_of_token.py).
    own = _get(raw, "/api/v1/schedule")
    assert own.status_code == 401
    assert own.json()["message"].startswith("a team key is not taken here")
    # member: it must name one.
    state = _get(raw, "/api/v1/state")
    assert state.status_code == 400
    assert "X-Curfew-User" in state.json()["message"]
    # itself: the key reads its team, naming nobody.
    members = _get(raw, "/api/v1/team/members")
    assert members.status_code == 200, members.content
    assert members.json()["team"] == "lab"


def test_a_sync_route_runs_on_the_edges_pool(
    team_key: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, raw = team_key
    hops: list[str] = []
    real = threads.run_sync

    async def counted(function: Any, *args: Any) -> Any:
        hops.append(function.__name__)
        return await real(function, *args)

    monkeypatch.setattr(edge_app, "run_sync", counted)
    assert _get(raw, "/api/v1/team/members").status_code == 200
    assert hops == ["members"]


def test_any_other_api_path_is_the_apis_404_without_a_token() -> None:
    response = AsgiClient().request("POST", "/api/v1/nothing/here", b"{}", "application/json")
    assert response.status_code == 404
    body = json.loads(response.content)
    assert body["error"] == "not_found"
    assert "/api/v1/nothing/here" in body["message"]


def test_a_query_past_djangos_field_limit_is_the_apis_400(api: Any) -> None:
    query = "&".join(f"x{n}=1" for n in range(1100))
    response = AsgiClient({"HTTP_AUTHORIZATION": f"Bearer {api.token}"}).request(
        "GET", f"/api/v1/savings?{query}"
    )
    assert response.status_code == 400
    assert json.loads(response.content)["fields"] == {"query": "has too many parameters"}
