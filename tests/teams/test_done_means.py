"""Issue 26's "done means": a team made with the commands, its night earlier
than a member's own, gives the member the team's night through their own
token and through the team key; a non-member through the team key is
refused; a member cannot change the team schedule. Each gate with its control."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from curfew_core.models import AuditEntry, Team, TeamMembership
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client

#: A Tuesday evening: the member's own night (23:00) has not begun; the team's (21:00) has.
EVENING = "2026-09-29T21:30:00+08:00"
TEAM_NIGHT = {
    "curfew_start": "20:00",
    "lights_out": "21:00",
    "wake_up": "07:00",
    "anchors": [["20:00", 1024], ["21:00", 64]],
}


def run(*args: str) -> str:
    out = StringIO()
    call_command("curfew", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1].strip()


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def verdict(token: str, **body: Any) -> Any:
    return bearer(token).post("/api/v1/verdict", body, content_type="application/json")


@pytest.fixture
def people(transactional_db: None) -> dict[str, str]:
    """Three people with their own API tokens: an admin, a member, an outsider."""
    tokens = {}
    for name in ("boss", "alice", "bob"):
        user = User.objects.create_user(name)
        tokens[name] = token_create(user=user)[1]
    return tokens


def test_team_night_through_own_token_and_team_key(people: dict[str, str]) -> None:
    # Control: alone, alice's AI works at 21:30.
    alone = verdict(people["alice"], at=EVENING)
    assert alone.status_code == 200, alone.content
    assert alone.json()["state"] == "on-duty"

    assert "created" in run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    team_key = last_line(run("team-token", "acme"))
    assert team_key.startswith("cft_")

    saved = bearer(people["boss"]).patch(
        "/api/v1/team/schedule", TEAM_NIGHT, content_type="application/json"
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["lights_out"] == "21:00"

    own = verdict(people["alice"], at=EVENING)
    assert own.status_code == 200
    assert own.json()["state"] == "lights-out"
    assert own.json()["action"] == "short-circuit"
    assert "team: lights out until 07:00" in own.json()["reason"]

    through_key = verdict(team_key, user="alice", at=EVENING)
    assert through_key.status_code == 200, through_key.content
    assert through_key.json()["state"] == "lights-out"
    # The same member's verdict either way.
    assert through_key.json()["reason"] == own.json()["reason"]

    # State too, by query parameter and by header.
    state = bearer(team_key).get("/api/v1/state?user=alice")
    assert state.status_code == 200, state.content
    header = Client(HTTP_AUTHORIZATION=f"Bearer {team_key}", HTTP_X_CURFEW_USER="alice")
    assert header.get("/api/v1/state").status_code == 200

    # The team's night does not reach bob, who is in no team (control).
    assert verdict(people["bob"], at=EVENING).json()["state"] == "on-duty"


def test_team_key_refuses_a_non_member_in_the_apis_shape(people: dict[str, str]) -> None:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    team_key = last_line(run("team-token", "acme"))
    # Control: a member is answered.
    assert verdict(team_key, user="alice").status_code == 200
    for name in ("bob", "nobody-at-all"):
        refused = verdict(team_key, user=name)
        assert refused.status_code == 404
        body = refused.json()
        assert body["error"] == "not_found"
        assert "state" not in body
    # Another team's member is no member of this key's team either.
    run("team", "create", "other", "--admin", "bob")
    other_key = last_line(run("team-token", "other"))
    assert verdict(other_key, user="alice").status_code == 404
    assert verdict(other_key, user="bob").status_code == 200
    # Naming nobody is a 400 saying how to name one.
    nameless = verdict(team_key)
    assert nameless.status_code == 400
    assert "X-Curfew-User" in nameless.json()["message"]
    # A personal token may not ask for somebody else.
    assert verdict(people["alice"], user="boss").status_code == 422


def test_a_member_cannot_change_the_team_schedule(people: dict[str, str]) -> None:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    refused = bearer(people["alice"]).patch(
        "/api/v1/team/schedule", TEAM_NIGHT, content_type="application/json"
    )
    assert refused.status_code == 403
    team = Team.objects.get(name="acme")
    assert team.version == 0
    assert bearer(people["alice"]).get("/api/v1/team/schedule").json()["lights_out"] == "03:00"
    # Control: the admin can, with the same body.
    assert (
        bearer(people["boss"])
        .patch("/api/v1/team/schedule", TEAM_NIGHT, content_type="application/json")
        .status_code
        == 200
    )
    team.refresh_from_db()
    assert team.version == 1
    # The team key reads, and never changes.
    team_key = last_line(run("team-token", "acme"))
    assert bearer(team_key).get("/api/v1/team/schedule").status_code == 200
    assert (
        bearer(team_key)
        .patch("/api/v1/team/schedule", {"lights_out": "20:30"}, content_type="application/json")
        .status_code
        == 403
    )
    # Outside any team: 404, never another team's schedule.
    assert bearer(people["bob"]).get("/api/v1/team/schedule").status_code == 404
    # Every change audited, with the team.
    actions = set(
        AuditEntry.objects.filter(team=team, subject="team").values_list("action", flat=True)
    )
    assert {"created", "member added", "schedule saved", "key created"} <= actions


def test_members_page_lists_state_now_and_next(people: dict[str, str]) -> None:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    page = bearer(people["boss"]).get("/api/v1/team/members?per_page=1")
    assert page.status_code == 200, page.content
    body = page.json()
    assert body["total"] == 2
    assert len(body["members"]) == 1
    assert body["next_page"] == 2
    first = body["members"][0]
    assert first["user"] == "boss"
    assert first["role"] == "admin"
    assert {"state", "next_change", "reason"} <= set(first)
    # The next change is the engine's (one truth, issue 39), not the
    # verdict's valid_until: the same instant, state and side as the plan's.
    from curfew_core.selectors.bundles import bundle_for
    from curfew_core.selectors.outlook import outlook_of

    boss = User.objects.get(username="boss")
    change = outlook_of(bundle_for(boss.pk), now=timezone.now()).next_change()
    assert change is not None
    shown = first["next_change"]
    assert (shown["state"], shown["side"]) == (change.state.value, change.side)
    assert abs(datetime.fromisoformat(shown["at"]) - change.at) < timedelta(minutes=1)
    assert bearer(people["boss"]).get("/api/v1/team/members?per_page=0").status_code == 400
    assert bearer(people["boss"]).get("/api/v1/team/members?sort=x").status_code == 400
    # As the Team page: a plain member may not list the others' states (issue
    # 41, finding 7: they could); the team key may, for its gateway.
    refused = bearer(people["alice"]).get("/api/v1/team/members")
    assert refused.status_code == 403
    assert refused.json()["error"] == "forbidden"
    assert "admin" in refused.json()["message"]
    team_key = last_line(run("team-token", "acme"))
    assert bearer(team_key).get("/api/v1/team/members").status_code == 200


def test_one_team_per_person_and_the_last_admin_stays(people: dict[str, str]) -> None:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    run("team", "create", "other", "--admin", "bob")
    with pytest.raises(CommandError, match="already in team 'acme'"):
        run("team", "add", "other", "alice")
    assert TeamMembership.objects.get(user__username="alice").team.name == "acme"
    with pytest.raises(CommandError, match="last admin"):
        run("team", "remove", "acme", "boss")
    with pytest.raises(CommandError, match="last admin"):
        run("team", "role", "acme", "boss", "member")
    # Control: with a second admin, the first may go.
    run("team", "role", "acme", "alice", "admin")
    run("team", "remove", "acme", "boss")
    assert not TeamMembership.objects.filter(user__username="boss").exists()


def test_a_members_state_draws_the_day_both_schedules_make(people: dict[str, str]) -> None:
    """``GET /api/v1/state``'s ``day`` is the plan the member's verdicts
    follow (team and own, harsher wins), through their token and the team key."""
    own_day = bearer(people["alice"]).get("/api/v1/state").json()["day"]
    assert {"start": "21:00", "end": "23:00", "state": "lights-out", "peak": False} not in own_day
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    assert (
        bearer(people["boss"])
        .patch("/api/v1/team/schedule", TEAM_NIGHT, content_type="application/json")
        .status_code
        == 200
    )
    team_key = last_line(run("team-token", "acme"))
    for client in (
        bearer(people["alice"]),
        Client(HTTP_AUTHORIZATION=f"Bearer {team_key}", HTTP_X_CURFEW_USER="alice"),
    ):
        day = client.get("/api/v1/state").json()["day"]
        starts = {(seg["start"], seg["state"]) for seg in day}
        assert ("20:00", "winding") in starts, day
        assert ("21:00", "lights-out") in starts, day
        # The member's own lights-out later on is still there (03:00 to 07:00 is the team's).
        assert day[-1]["state"] == "lights-out"
    # Bob, in no team, keeps his own day (the control).
    bob = {
        (seg["start"], seg["state"])
        for seg in bearer(people["bob"]).get("/api/v1/state").json()["day"]
    }
    assert ("21:00", "lights-out") not in bob
