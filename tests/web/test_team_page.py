"""The Team page (``/team/``): who may see and change what, each gate with its
control group; the members' states paged at a team's scale; the policy in words."""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import TestCase, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import translation

from curfew_core.models import AuditEntry, Team, TeamMembership
from curfew_core.selectors import teams as team_selectors
from curfew_core.selectors.verdicts import verdict_for
from curfew_core.services import teams as team_services
from curfew_core.services.schedules import schedule_update
from tests.web.conftest import PageClient
from tests.web.forms import as_post, form_fields

PASSWORD = "correct horse battery"


def _user(name: str) -> User:
    return User.objects.create_user(name, password=PASSWORD)


@pytest.fixture
def team(user: User) -> Team:
    """Team "night-owls" with ada (the ``user`` fixture) as its admin."""
    made: Team = team_services.team_create(name="night-owls", admin=user)
    return made


@pytest.fixture
def member(team: Team) -> User:
    """bob, a plain member of the team."""
    bob = _user("bob")
    team_services.member_add(team=team, user=bob)
    return bob


@pytest.fixture
def stranger(db: None) -> User:
    return _user("eve")


def _team_version(team: Team) -> int:
    return Team.objects.get(pk=team.pk).version


def _role(team: Team, person: User) -> str:
    return TeamMembership.objects.get(team=team, user=person).role


# -- who sees the page ------------------------------------------------------------


def test_a_stranger_gets_404_and_a_member_gets_the_page(
    team: Team, member: User, stranger: User
) -> None:
    assert PageClient(stranger).get("/team/").status_code == 404
    # Control: the same page for a member of the team.
    response = PageClient(member).get("/team/")
    assert response.status_code == 200
    assert "night-owls" in response.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/team/schedule/",
        "/team/invite/",
        "/team/rules/",
        "/team/overtime/",
        "/team/members/1/role/",
        "/team/members/1/remove/",
        "/team/leave/",
    ],
)
def test_a_stranger_gets_404_from_every_team_door(team: Team, stranger: User, path: str) -> None:
    page = PageClient(stranger)
    assert page.post(path, {"role": "admin", "username": "eve", "hours": "1"}).status_code == 404
    assert TeamMembership.objects.filter(user=stranger).count() == 0


def test_the_navigation_shows_team_to_members_only(
    team: Team, member: User, stranger: User
) -> None:
    assert 'data-section="team"' not in PageClient(stranger).get("/").content.decode()
    assert 'data-section="team"' in PageClient(member).get("/").content.decode()


def test_signed_out_is_sent_to_sign_in(anonymous: PageClient) -> None:
    response = anonymous.get("/team/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


# -- a member cannot change what only admins change ------------------------------


def _schedule_post(page: PageClient, **changes: str) -> Any:
    fields = form_fields(page.get("/team/schedule/").content.decode(), "schedule-form")
    return page.post("/team/schedule/", as_post(fields, **changes))


def test_a_member_cannot_change_the_team_schedule_and_an_admin_can(
    page: PageClient, team: Team, member: User
) -> None:
    before = _team_version(team)
    bob = PageClient(member)
    assert bob.get("/team/schedule/").status_code == 403
    # A post built from the admin's own form, sent by the member: refused, nothing saved.
    fields = form_fields(page.get("/team/schedule/").content.decode(), "schedule-form")
    assert bob.post("/team/schedule/", as_post(fields, curfew_start="22:00")).status_code == 403
    assert _team_version(team) == before
    # Control: the admin's same post saves.
    response = page.post("/team/schedule/", as_post(fields, curfew_start="22:00"))
    assert response.status_code == 302
    assert _team_version(team) == before + 1
    assert team_selectors.team_schedule(team)["curfew_start"] == "22:00"


def test_the_team_schedule_save_answers_as_the_schedule_section(
    page: PageClient, team: Team
) -> None:
    before = _team_version(team)
    fields = form_fields(page.get("/team/schedule/").content.decode(), "schedule-form")
    # Refused by the one validation layer: the form again, named, nothing saved.
    refused = page.post("/team/schedule/", as_post(fields, curfew_start="25:00"))
    assert refused.status_code == 400
    assert _team_version(team) == before
    # Saved in place with htmx: the form anew, and a toast that says so.
    saved = page.post("/team/schedule/", as_post(fields, curfew_start="22:00"), htmx=True)
    assert saved.status_code == 200
    assert "Saved. Every member" in saved.content.decode()
    assert _team_version(team) == before + 1
    # The same form again is now stale: a conflict, the save elsewhere kept.
    stale = page.post("/team/schedule/", as_post(fields, curfew_start="21:00"))
    assert stale.status_code == 409
    assert team_selectors.team_schedule(team)["curfew_start"] == "22:00"


def test_a_member_cannot_change_roles_and_an_admin_can(
    page: PageClient, team: Team, member: User
) -> None:
    bob = PageClient(member)
    response = bob.post(f"/team/members/{member.pk}/role/", {"role": "admin"})
    assert response.status_code == 403
    assert _role(team, member) == "member"
    # Control: the admin makes bob an admin.
    assert page.post(f"/team/members/{member.pk}/role/", {"role": "admin"}).status_code == 302
    assert _role(team, member) == "admin"


def test_a_member_cannot_remove_anyone_and_an_admin_can(
    page: PageClient, user: User, team: Team, member: User
) -> None:
    assert PageClient(member).post(f"/team/members/{user.pk}/remove/").status_code == 403
    assert TeamMembership.objects.filter(team=team).count() == 2
    assert page.post(f"/team/members/{member.pk}/remove/").status_code == 302
    assert not TeamMembership.objects.filter(user=member).exists()


def test_a_refused_change_of_a_member_names_them(page: PageClient, user: User, team: Team) -> None:
    # The only admin, demoting or removing themselves: refused, named, unchanged.
    for door, data in (("role", {"role": "member"}), ("remove", {})):
        response = page.post(f"/team/members/{user.pk}/{door}/", data)
        assert response.status_code == 400, door
        said = f"{user.username} is the last admin of the team"
        assert said in response.content.decode(), door
    assert _role(team, user) == "admin"


def test_an_admin_cannot_touch_another_teams_member(page: PageClient, team: Team) -> None:
    carol = _user("carol")
    team_services.team_create(name="larks", admin=carol)
    assert page.post(f"/team/members/{carol.pk}/remove/").status_code == 404
    assert page.post(f"/team/members/{carol.pk}/role/", {"role": "member"}).status_code == 404
    assert _role(Team.objects.get(name="larks"), carol) == "admin"


def test_the_last_admin_cannot_leave_until_there_is_another(
    page: PageClient, user: User, team: Team, member: User
) -> None:
    response = page.post("/team/leave/")
    assert response.status_code == 400
    assert 'id="team-error"' in response.content.decode()
    assert _role(team, user) == "admin"
    # Control: with a second admin, the first may leave.
    team_services.member_role_change(team=team, user=member, role="admin")
    assert page.post("/team/leave/").status_code == 302
    assert not TeamMembership.objects.filter(user=user).exists()


# -- invites ------------------------------------------------------------------------


def test_invite_by_username_joins_and_a_second_team_is_refused_by_name(
    page: PageClient, team: Team
) -> None:
    dan = _user("dan")
    assert page.post("/team/invite/", {"username": "dan", "role": "member"}).status_code == 302
    assert _role(team, dan) == "member"
    carol = _user("carol")
    team_services.team_create(name="larks", admin=carol)
    response = page.post("/team/invite/", {"username": "carol", "role": "member"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "larks" in html
    assert TeamMembership.objects.get(user=carol).team.name == "larks"


def test_inviting_nobody_or_a_bad_role_is_named_and_changes_nothing(
    page: PageClient, team: Team
) -> None:
    count = TeamMembership.objects.count()
    assert "no user named" in page.post("/team/invite/", {"username": "zed"}).content.decode()
    bad = page.post("/team/invite/", {"username": "ada", "role": "owner"})
    assert bad.status_code == 400
    assert TeamMembership.objects.count() == count


def test_invite_links_need_sign_up(page: PageClient, team: Team) -> None:
    with override_settings(CURFEW_SIGNUP=False):
        assert page.post("/team/invite/link/", {"role": "member"}).status_code == 404
        assert 'id="invite-link-form"' not in page.get("/team/").content.decode()
    with override_settings(CURFEW_SIGNUP=True):
        response = page.post("/team/invite/link/", {"role": "member"})
        assert response.status_code == 201
        link = re.search(r'<code class="team-link">([^<]+)</code>', response.content.decode())
        assert link is not None
        path = "/" + link.group(1).split("/", 3)[3]
        # Someone in another team is refused, that team named; the link stays usable.
        carol = _user("carol")
        team_services.team_create(name="larks", admin=carol)
        refused = PageClient(carol).post(path)
        assert refused.status_code == 400
        assert "larks" in refused.content.decode()
        joiner = PageClient(_user("fay"))
        assert joiner.get(path).status_code == 200  # opening asks; it does not join
        assert not TeamMembership.objects.filter(user__username="fay").exists()
        assert joiner.post(path).status_code == 302
        assert TeamMembership.objects.get(user__username="fay").team == team
        # One time: a second person is refused.
        assert PageClient(_user("gus")).post(path).status_code in (400, 404)
        assert not TeamMembership.objects.filter(user__username="gus").exists()


# -- what members see ---------------------------------------------------------------


def test_a_member_sees_the_policy_and_what_it_overrides_in_words(
    page: PageClient, team: Team, member: User
) -> None:
    team_services.team_schedule_update(team=team, changes={"curfew_start": "21:00"})
    html = PageClient(member).get("/team/").content.decode()
    overrides = html.split('id="policy-overrides"')[1].split("</section>")[0]
    # What it overrides is the engine's plan, per day (tests/teams/test_team_policy_card.py).
    assert "<strong>Every day</strong>" in overrides
    assert "<li>21:00–23:00 getting sleepy instead of working</li>" in overrides
    # Control: a member whose own curfew starts earlier keeps theirs; nothing to name.
    with TestCase.captureOnCommitCallbacks(execute=True):  # the cached rows dropped
        schedule_update(user=member, changes={"curfew_start": "20:00"}, source="test", actor=member)
    html = PageClient(member).get("/team/").content.decode()
    card = html.split('id="policy-overrides"')[1].split("</section>")[0]
    assert "instead of" not in card
    assert "Nothing: your own schedule" in card


def test_what_the_words_say_the_team_overrides_is_what_the_verdict_does(
    team: Team, member: User, stranger: User
) -> None:
    """The page's words are the engine's plan; so is the verdict. At 21:30 on a
    Tuesday the team's 21:00 curfew (named as overriding bob's working hours
    until 23:00) is what bob's verdict follows; a stranger with the same own
    schedule is still on duty (the control)."""
    team_services.team_schedule_update(team=team, changes={"curfew_start": "21:00"})
    html = PageClient(member).get("/team/").content.decode()
    assert "21:00–23:00 getting sleepy instead of working" in html
    at = dt.datetime(2026, 12, 1, 21, 30, tzinfo=zoneinfo.ZoneInfo("Asia/Shanghai"))
    now = dt.datetime.now(dt.UTC)
    assert verdict_for(user_id=member.pk, now=now, at=at)[0].state.value == "winding"
    assert verdict_for(user_id=stranger.pk, now=now, at=at)[0].state.value == "on-duty"


def test_the_overview_and_schedule_say_a_team_policy_applies(
    team: Team, member: User, stranger: User
) -> None:
    for path in ("/", "/schedule/"):
        assert 'id="team-line"' in PageClient(member).get(path).content.decode()
        assert 'id="team-line"' not in PageClient(stranger).get(path).content.decode()


def test_a_member_sees_no_admin_controls(team: Team, member: User, page: PageClient) -> None:
    html = PageClient(member).get("/team/").content.decode()
    assert 'id="member-table"' not in html
    assert 'id="invite-form"' not in html
    # Control: the admin sees them.
    html = page.get("/team/").content.decode()
    assert 'id="member-table"' in html
    assert 'id="invite-form"' in html


def test_the_audit_lists_team_changes(page: PageClient, team: Team, member: User) -> None:
    assert "Role changed" not in page.get("/team/").content.decode().split('id="audit"')[1]
    page.post(f"/team/members/{member.pk}/role/", {"role": "admin"})
    assert AuditEntry.objects.filter(team=team).exists()
    html = page.get("/team/").content.decode()
    audit = html.split('id="audit"')[1]
    assert "Role changed" in audit
    assert "Member added" in audit


# -- scale: 5,000 members, one page at a time ---------------------------------------


@pytest.fixture
def big_team(team: Team) -> Team:
    """5,000 members beside ada, made in bulk (the services add one at a time)."""
    users = User.objects.bulk_create(
        [User(username=f"m{number:05d}", password="!") for number in range(5000)]
    )
    TeamMembership.objects.bulk_create(
        [TeamMembership(team=team, user=person, role="member") for person in users]
    )
    return team


def test_a_team_of_5000_is_read_a_page_at_a_time_in_few_queries(
    page: PageClient, big_team: Team
) -> None:
    page.get("/team/")  # warm: the site's own caches, the admin's own schedule
    with CaptureQueriesContext(connection) as first:
        response = page.get("/team/")
    assert response.status_code == 200
    html = response.content.decode()
    assert len(re.findall(r'<tr data-member="', html)) == 50
    assert "1–50 of 5,001" in html or "1–50 of 5001" in html
    with CaptureQueriesContext(connection) as deep:
        later = page.get("/team/", {"page": "100"})
    assert later.status_code == 200
    assert "m04949" in later.content.decode()
    # Page 100 was never read: its members' rows are read then, in one query a
    # table (schedules, overrides, memberships), never one a member (50 more).
    assert len(deep.captured_queries) <= len(first.captured_queries) + 5
    assert len(first.captured_queries) <= 25, [q["sql"] for q in first.captured_queries]


def test_a_page_past_the_end_shows_the_last_and_a_bad_page_is_named(
    page: PageClient, team: Team, member: User
) -> None:
    response = page.get("/team/", {"page": "7"})
    assert response.status_code == 200
    assert 'data-member="bob"' in response.content.decode()
    bad = page.get("/team/", {"page": "two"})
    assert bad.status_code == 400
    assert 'id="page-problem"' in bad.content.decode()


def test_the_next_change_is_said_as_what_changes() -> None:
    """The next change is the engine's (``next_change``: a change of state,
    named); a member with none within its horizon gets no words (a dash)."""
    from types import SimpleNamespace

    from curfew_core.engine import State
    from curfew_core.engine.effective import Change
    from curfew_core.web.team.words import member_rows, next_ms

    at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(minutes=5)

    def row(user_id: int, state: str) -> SimpleNamespace:
        return SimpleNamespace(user_id=user_id, username="bob", role="member", state=state)

    members = SimpleNamespace(rows=[row(1, "on-duty"), row(2, "winding"), row(3, "lights-out")])
    changes = {
        1: Change(at, State.WINDING, "team", None, "team"),
        2: Change(at + dt.timedelta(hours=1), State.LIGHTS_OUT, "own", None, "own"),
        3: None,
    }
    with translation.override("en"):
        words = [r.next_words for r in member_rows(members, changes, tz_name="UTC")]
    when = at.strftime("%H:%M")
    assert words[0] in (f"Getting sleepy at {when}", f"Getting sleepy at {at:%Y-%m-%d %H:%M}")
    assert words[1].startswith("Asleep at ")
    assert words[2] == ""
    assert next_ms(changes) == int(at.timestamp() * 1000)
