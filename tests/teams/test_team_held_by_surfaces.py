"""Whose rule makes a member's next change come then, on every surface that
tells the next change: the capsule's ``next``, the team API's member rows
and ``curfew status`` say the engine's ``Change.held_by``, as the overview's
"by your team's schedule" does (``test_team_wake_tag``); none re-derives it.

Bob's own wake-up is 09:00, the team's 09:30: at 09:15 he is asleep by the
team's night alone, and the change at 09:30 is into a stretch both sides
agree on (``side``: ``both``), held by the team (``held_by``: ``team``). The
control swaps the wake-ups: bob's own rule ends the night, not the team's."""

from __future__ import annotations

import datetime as dt
from io import StringIO
from typing import Any
from unittest import mock

import jsonschema
from django.contrib.auth.models import User
from django.core.management import call_command

from curfew_core.api.openapi import document
from curfew_core.engine import Overrides, State
from curfew_core.engine.effective import Change, next_change
from curfew_core.models import Team
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.outlook import outlook_of
from curfew_core.selectors.verdicts import capsule_payload
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.teams.test_team_policy_card import _night, _save, pair

__all__ = ["pair"]

SHANGHAI = dt.timezone(dt.timedelta(hours=8))
#: A Sunday (no peak hours): the nights end at 09:00 and 09:30.
SUNDAY_0915 = dt.datetime(2026, 12, 6, 9, 15, tzinfo=SHANGHAI)
AT_0930 = dt.datetime(2026, 12, 6, 9, 30, tzinfo=SHANGHAI)
EARLY = _night("22:00", "01:00", "09:00")
LATE = _night("22:00", "01:00", "09:30")


def _engine(bob: User) -> Change:
    """The engine's next change for bob, straight from ``next_change`` with
    his verdict inputs (and the same through ``selectors.outlook``)."""
    bundle = bundle_for(bob.pk)
    assert bundle.team is not None
    change = next_change(SUNDAY_0915, bundle.schedule, Overrides(), bundle.team)
    assert change is not None
    assert outlook_of(bundle, now=SUNDAY_0915).next_change() == change
    return change


def _members_row(team: Team, bob: User) -> dict[str, Any]:
    """Bob's row of ``GET /api/v1/team/members`` (the admin's key), at 09:15."""
    raw = token_create(user=User.objects.get(username="boss"))[1]
    with mock.patch("django.utils.timezone.now", return_value=SUNDAY_0915):
        answer = Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/team/members")
    assert answer.status_code == 200, answer.content
    [row] = [row for row in answer.json()["members"] if row["user"] == bob.username]
    # The declared shape holds it (``api/team_openapi.py``).
    declared = document()
    jsonschema.validate(row, {**declared["components"]["schemas"]["TeamMember"], "components": {}})
    return dict(row)


def _cli_line(bob: User) -> str:
    out = StringIO()
    with mock.patch("django.utils.timezone.now", return_value=SUNDAY_0915):
        call_command("curfew", "status", "--user", bob.get_username(), stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("next: ")]
    return line


def test_the_teams_later_wake_up_is_the_teams_on_every_surface(
    pair: tuple[Team, User],
) -> None:
    team, bob = pair
    _save(team, bob, LATE, EARLY)
    change = _engine(bob)
    assert (change.at, change.state, change.side, change.held_by) == (
        AT_0930,
        State.ON_DUTY,
        "both",
        "team",
    )

    nxt = capsule_payload(user_id=bob.pk, now=SUNDAY_0915)["next"]
    assert nxt["at"] == change.at.astimezone(dt.UTC).isoformat()
    assert (nxt["state"], nxt["side"], nxt["held_by"]) == ("on-duty", "both", "team")

    row = _members_row(team, bob)["next_change"]
    assert dt.datetime.fromisoformat(row["at"]) == change.at
    assert (row["state"], row["side"], row["held_by"]) == ("on-duty", "both", "team")

    assert _cli_line(bob).endswith("at 2026-12-06 09:30, by your team's schedule")


def test_the_members_own_later_wake_up_is_not_the_teams(pair: tuple[Team, User]) -> None:
    team, bob = pair
    _save(team, bob, EARLY, LATE)
    change = _engine(bob)
    assert (change.at, change.side, change.held_by) == (AT_0930, "both", "both")

    nxt = capsule_payload(user_id=bob.pk, now=SUNDAY_0915)["next"]
    assert (nxt["side"], nxt["held_by"]) == ("both", "both")
    row = _members_row(team, bob)["next_change"]
    assert (row["side"], row["held_by"]) == ("both", "both")
    assert _cli_line(bob).endswith("at 2026-12-06 09:30, by your own and your team's schedule")
