"""What an open invite is (unused, unrevoked, unexpired) is one rule
(``selectors.teams.open_invite_filter``): the team page's list of invites, the
join page's look-up and joining itself agree on every invite, so no page
offers an invite that joining then refuses, nor hides one it would take."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User

from curfew_core.models import Team, TeamInvite, TeamMembership
from curfew_core.selectors.teams import invite_team, open_invites
from curfew_core.services.teams import (
    INVITE_LIFETIME,
    TeamError,
    invite_accept,
    invite_create,
    invite_digest,
    invite_revoke,
    team_create,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _used(team: Team, invite: TeamInvite, raw: str) -> None:
    invite_accept(raw=raw, user=User.objects.create_user("first"), now=NOW)


def _revoked(team: Team, invite: TeamInvite, raw: str) -> None:
    invite_revoke(team=team, invite_id=invite.pk, now=NOW)


def _expired(team: Team, invite: TeamInvite, raw: str) -> None:
    TeamInvite.objects.filter(pk=invite.pk).update(expires_at=NOW)


def _open(team: Team, invite: TeamInvite, raw: str) -> None:
    """Nothing: the invite is open until ``NOW + INVITE_LIFETIME``."""


@pytest.mark.parametrize(
    ("closing", "is_open"),
    [(_open, True), (_used, False), (_revoked, False), (_expired, False)],
    ids=["open", "used", "revoked", "expired"],
)
def test_the_list_the_join_page_and_joining_agree(
    closing: Callable[[Team, TeamInvite, str], None], is_open: bool
) -> None:
    team = team_create(name="acme", admin=User.objects.create_user("boss"))
    invite, raw = invite_create(team=team, now=NOW)
    assert invite.expires_at == NOW + INVITE_LIFETIME
    closing(team, invite, raw)
    listed = [each.pk for each in open_invites(team=team, now=NOW)] == [invite.pk]
    found = invite_team(digest=invite_digest(raw), now=NOW) == team
    joiner = User.objects.create_user("joiner")
    assert (listed, found) == (is_open, is_open)
    if is_open:
        invite_accept(raw=raw, user=joiner, now=NOW)
    else:
        with pytest.raises(TeamError) as refused:
            invite_accept(raw=raw, user=joiner, now=NOW)
        assert refused.value.code == "invalid_invite"
    assert TeamMembership.objects.filter(user=joiner).exists() is is_open
