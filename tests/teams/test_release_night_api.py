"""``POST /api/v1/team/overtime`` (issue 26): an admin releases the team's
night for everyone over HTTP, as the Team page's button and ``manage.py
curfew team overtime`` do; members and the team key are refused, bad
bodies name the field and change nothing, and every release is audited."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from curfew_core.models import AuditEntry, Team
from tests.teams.test_done_means import bearer, last_line, people, run

__all__ = ["people"]
OVERTIME = "/api/v1/team/overtime"


def _post(token: str, body: object) -> object:
    return bearer(token).post(OVERTIME, body, content_type="application/json")


@pytest.fixture
def team_key(people: dict[str, str]) -> str:
    run("team", "create", "acme", "--admin", "boss")
    run("team", "add", "acme", "alice")
    return last_line(run("team-token", "acme"))


def _overtime_until() -> datetime | None:
    return Team.objects.get(name="acme").overtime_until


def test_an_admin_releases_the_night_and_ends_it(people: dict[str, str], team_key: str) -> None:
    before = timezone.now()
    released = _post(people["boss"], {"minutes": 90})
    assert released.status_code == 200, released.content
    until = _overtime_until()
    assert until is not None
    assert before + timedelta(minutes=90) <= until <= timezone.now() + timedelta(minutes=90)
    assert released.json() == {"team": "acme", "overtime_until": until.isoformat()}
    # Every member reads it in the team's schedule.
    shown = bearer(people["alice"]).get("/api/v1/team/schedule").json()["overtime_until"]
    assert shown == until.isoformat()
    ended = _post(people["boss"], {"end": True})
    assert ended.status_code == 200
    assert ended.json()["overtime_until"] is None
    assert _overtime_until() is None
    audited = list(
        AuditEntry.objects.filter(team__name="acme", subject="team")
        .order_by("id")
        .values_list("action", "channel")
    )
    assert audited[-2:] == [("overtime", "api"), ("overtime ended", "api")]


def test_members_and_the_team_key_are_refused(people: dict[str, str], team_key: str) -> None:
    for token in (people["alice"], team_key):
        refused = _post(token, {"minutes": 60})
        assert refused.status_code == 403, refused.content
        assert refused.json()["error"] == "forbidden"
    assert _overtime_until() is None
    # Outside any team: 404.
    assert _post(people["bob"], {"minutes": 60}).status_code == 404
    # The control group: the admin's own token, the same body.
    assert _post(people["boss"], {"minutes": 60}).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"minutes": 0}, "minutes"),
        ({"minutes": 1441}, "minutes"),
        ({"minutes": "60"}, "minutes"),
        ({"minutes": True}, "minutes"),
        ({"minutes": 30.5}, "minutes"),
        ({"end": False}, "end"),
        ({}, "body"),
        ({"minutes": 60, "end": True}, "body"),
        ({"minutes": 60, "hours": 2}, "hours"),
    ],
)
def test_a_bad_body_names_the_field_and_changes_nothing(
    people: dict[str, str], team_key: str, body: dict[str, object], field: str
) -> None:
    refused = _post(people["boss"], body)
    assert refused.status_code == 400, refused.content
    assert field in refused.json()["fields"]
    assert _overtime_until() is None
    assert not AuditEntry.objects.filter(team__name="acme", action="overtime").exists()


def test_a_whole_number_written_as_a_float_is_a_whole_number(
    people: dict[str, str], team_key: str
) -> None:
    """``90.0`` is a JSON Schema integer, as the OpenAPI document promises
    (schemathesis sent 1119.0 and got a 400)."""
    released = _post(people["boss"], {"minutes": 90.0})
    assert released.status_code == 200, released.content


@pytest.mark.parametrize(
    ("body", "field"),
    [({"minutes": 1440.5}, "minutes"), ({"minutes": -1.0}, "minutes")],
)
def test_a_float_that_is_no_whole_number_is_refused(
    people: dict[str, str], team_key: str, body: dict[str, object], field: str
) -> None:
    refused = _post(people["boss"], body)
    assert refused.status_code == 400, refused.content
    assert field in refused.json()["fields"]
