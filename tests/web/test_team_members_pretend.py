"""QA "look" finding 4: the admin's "Members now" shows a member's pretend
("pretend it is ...") as a state; it must be marked, as the member's own
pages mark it. The state shown is still the engine's verdict for the member
(``verdict_for``); a member not pretending (the control) has no mark."""

from __future__ import annotations

import re
from collections.abc import Iterator
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.utils import translation

from curfew_core.models import Team
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.verdicts import verdict_for
from curfew_core.services import teams as team_services
from curfew_core.services.overrides import override_apply
from tests.api.conftest import FrozenClock, local
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local("2026-12-05 12:20"))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _row(html: str, name: str) -> str:
    found = re.search(rf'<tr data-member="{name}" data-state="[^"]+">(.*?)</tr>', html, re.S)
    assert found is not None, name
    return found.group(1)


def test_a_pretending_member_is_marked_in_members_now(clock: FrozenClock) -> None:
    boss = User.objects.create_user("boss", password="correct horse battery")
    team: Team = team_services.team_create(name="nightshift", admin=boss)
    alice = User.objects.create_user("alice")
    carol = User.objects.create_user("carol")
    for person in (alice, carol):
        team_services.member_add(team=team, user=person)
    override_apply(user=alice, command=from_words(["debug", "23:30"]), now=clock.now, actor=alice)
    html = PageClient(boss).get("/team/").content.decode()
    verdict, _ = verdict_for(user_id=alice.pk, now=clock.now)
    assert verdict.debug_at is not None
    assert f'data-member="alice" data-state="{verdict.state.value}"' in html
    assert "data-pretending" in _row(html, "alice")
    assert "pretending" in re.sub(r"<[^>]+>", " ", _row(html, "alice"))
    # The control: a member living in the real now.
    assert "data-pretending" not in _row(html, "carol")
