"""Issue 39's repro on the overview, the heads-up and the CLI: a team whose
night (21:00 sleepy, 22:00 asleep, wake 09:00) is earlier than a member's
own (23:00 / 03:00, wake 08:00 on weekdays). Every statement of what comes
next is the engine's effective plan, the team's side included; the same
person outside the team (the control) is told their own night."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import translation

from curfew_core.models import Team
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.verdicts import capsule_payload
from curfew_core.services import teams as team_services
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock, local
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db

TEAM_NIGHT = {
    "curfew_start": "21:00",
    "lights_out": "22:00",
    "wake_up": "09:00",
    "anchors": [["21:00", 1024], ["22:00", 64]],
}
#: The member's own night: the defaults (23:00, 03:00), up at 08:00 on weekdays.
OWN_NIGHT = {"weekdays": {day: {"wake_up": "08:00"} for day in ("mon", "tue", "wed", "thu", "fri")}}
#: A Wednesday afternoon (real clock); the pretend moves the page to 22:30.
AFTERNOON = "2026-12-02 14:00"


@pytest.fixture
def clock() -> Iterator[FrozenClock]:
    frozen = FrozenClock(local(AFTERNOON))
    with mock.patch("django.utils.timezone.now", side_effect=frozen):
        yield frozen


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def make_member(name: str, *, in_team: bool) -> User:
    """A person with the member's own night; with ``in_team``, in a team
    (its admin someone else) whose night is ``TEAM_NIGHT``."""
    person = User.objects.create_user(name, password="correct horse battery")
    schedule_update(user=person, changes=OWN_NIGHT, source="test", actor=person)
    if in_team:
        admin = User.objects.create_user(f"{name}-admin")
        team: Team = team_services.team_create(name=f"{name}-team", admin=admin)
        team_services.member_add(team=team, user=person)
        team_services.team_schedule_update(team=team, changes=TEAM_NIGHT, actor=admin)
    return person


def pretend(person: User, moment: str, clock: FrozenClock) -> None:
    override_apply(user=person, command=from_words(["debug", moment]), now=clock.now, actor=person)


def overview(person: User) -> str:
    return str(PageClient(person).get("/").content.decode())


def badge(html: str) -> str:
    match = re.search(r'id="now-state" data-state="([^"]+)"', html)
    assert match is not None
    return match.group(1)


def next_line(html: str) -> tuple[str, str]:
    """The countdown's words and its instant (``data-at``)."""
    match = re.search(r'<p class="countdown" id="now-next" data-at="([^"]*)"[^>]*>(.*?)</p>', html)
    assert match is not None, "no next-change line"
    return re.sub(r"<[^>]+>", "", match.group(2)).strip(), match.group(1)


def steps(html: str) -> list[tuple[str, str]]:
    """``(time, state)`` of each step, "now" for the first."""
    block = re.search(r'<ol class="steps" id="now-steps".*?</ol>', html, re.S)
    assert block is not None
    return [
        (time.strip(), state)
        for state, time in re.findall(
            r'<li class="step" data-state="([^"]+)".*?<span class="step-time">(.*?)</span>',
            block.group(0),
            re.S,
        )
    ]


def band_cells(html: str) -> list[str]:
    """The day band's 96 cell states, from midnight."""
    block = re.search(r'<div id="band".*?<ol class="band"[^>]*>(.*?)</ol>', html, re.S)
    assert block is not None
    return re.findall(r'<li class="cell [^"]*" data-state="([^"]+)"', block.group(1))


def heads_up(html: str) -> dict[str, Any]:
    block = re.search(r'id="heads-up-facts"[^>]*>(.*?)</script>', html, re.S)
    assert block is not None
    facts: dict[str, Any] = json.loads(block.group(1))
    return facts


def cells_of(day: list[dict[str, Any]]) -> list[str]:
    """A day plan (``GET /api/v1/state``'s ``day``) as the band's 96 cells:
    each the state at its midpoint."""

    def minutes(text: str) -> int:
        hours, mins = text.split(":")
        return int(hours) * 60 + int(mins)

    cells: list[str] = []
    for index in range(96):
        middle = index * 15 + 7.5
        cells.append(
            next(
                seg["state"] for seg in day if minutes(seg["start"]) <= middle < minutes(seg["end"])
            )
        )
    return cells


def cli_status(person: User) -> str:
    out = StringIO()
    call_command("curfew", "status", "--user", person.get_username(), stdout=out)
    return out.getvalue()


def api_state(person: User) -> dict[str, Any]:
    """``GET /api/v1/state`` with the person's own key."""
    raw = token_create(user=person)[1]
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/state")
    assert answer.status_code == 200
    state: dict[str, Any] = answer.json()
    return state


def test_the_issue_repro_pretending_2230_as_a_team_member(clock: FrozenClock) -> None:
    member = make_member("alice", in_team=True)
    alone = make_member("bob", in_team=False)
    for person in (member, alone):
        pretend(person, "2026-12-02 22:30", clock)

    html = overview(member)
    # Asleep by the team's night, and what comes next is the team's wake-up
    # (into the Thursday's peak hours), never the member's own sleepy hour.
    assert badge(html) == "lights-out"
    words, at = next_line(html)
    assert "Gets sleepy" not in words
    assert words.startswith("Off for peak hours in 10 h 30 min (Thu 09:00).")
    assert dt.datetime.fromisoformat(at) == local("2026-12-03 09:00")
    assert steps(html)[:2] == [("now", "lights-out"), ("Thu 09:00", "off-duty")]
    # The band is the member's day as the state API draws it: both schedules.
    state = api_state(member)
    assert band_cells(html) == cells_of(state["day"])
    assert band_cells(html)[21 * 4 : 22 * 4] == ["winding"] * 4
    assert band_cells(html)[22 * 4 : 24 * 4] == ["lights-out"] * 8
    # The heads-up: the pretended night's next change is the team's wake-up
    # (no words: less is held back then).
    facts = heads_up(html)
    assert (facts["next"]["at"], facts["next"]["words"]) == (
        local("2026-12-03 09:00").astimezone(dt.UTC).isoformat(),
        None,
    )

    # The control: alone, the same person is working and gets sleepy at 23:00.
    html = overview(alone)
    assert badge(html) == "on-duty"
    words, at = next_line(html)
    assert words == "Gets sleepy in 30 min (23:00)."
    assert steps(html)[:3] == [
        ("now", "on-duty"),
        ("23:00", "winding"),
        ("Thu 03:00", "lights-out"),
    ]
    state = api_state(alone)
    assert band_cells(html) == cells_of(state["day"])
    assert band_cells(html)[21 * 4 : 23 * 4] == ["on-duty"] * 8


def test_the_heads_up_comes_before_the_teams_boundary(clock: FrozenClock) -> None:
    member = make_member("alice", in_team=True)
    alone = make_member("bob", in_team=False)
    clock.set(local("2026-12-02 20:55"))
    nxt = capsule_payload(user_id=member.pk, now=clock.now)["next"]
    assert (nxt["state"], nxt["local"], nxt["side"]) == ("winding", "21:00", "team")
    assert nxt["heads_up_at"] == local("2026-12-02 20:50").astimezone(dt.UTC).isoformat()
    assert nxt["words"]["en"] == "Your AI gets sleepy in {minutes} min ({at})."
    assert heads_up(overview(member))["next"] == nxt
    words, _at = next_line(overview(member))
    assert words == "Gets sleepy in 5 min (21:00). by your team's schedule"
    # At 21:55 the team's lights-out is next, before the member's own 23:00.
    clock.set(local("2026-12-02 21:55"))
    nxt = capsule_payload(user_id=member.pk, now=clock.now)["next"]
    assert (nxt["state"], nxt["local"], nxt["side"]) == ("lights-out", "22:00", "team")
    # The control: alone, the heads-up is the member's own 23:00.
    nxt = capsule_payload(user_id=alone.pk, now=clock.now)["next"]
    assert (nxt["state"], nxt["local"], nxt["side"]) == ("winding", "23:00", "own")


def test_the_cli_says_the_teams_next_change(clock: FrozenClock) -> None:
    member = make_member("alice", in_team=True)
    alone = make_member("bob", in_team=False)
    clock.set(local("2026-12-02 22:30"))
    out = cli_status(member)
    assert out.splitlines()[0].startswith("lights-out — ")
    assert "next: off-duty (" in out
    # Whose rule makes it come then, as the page's tag says it (the engine's
    # ``Change.held_by``): both are off for peak hours at 09:00, but the
    # team's night alone held alice from her own 08:00 wake-up until then.
    # It said "by your own and your team's schedule" (the side that starts).
    assert "at 2026-12-03 09:00, by your team's schedule" in out
    words, _at = next_line(overview(member))
    assert words.endswith("(Thu 09:00). by your team's schedule")
    # The control: alone, sleepy at 23:00, with no word about a team.
    out = cli_status(alone)
    assert "next: winding (" in out
    assert out.rstrip().endswith("at 2026-12-02 23:00")


def week_cells(html: str, day: str) -> list[str]:
    """The week band's cells of one day (``data-date``)."""
    block = re.search(
        rf'<div class="band-row[^"]*" data-date="{day}">.*?<ol class="band"[^>]*>(.*?)</ol>',
        html,
        re.S,
    )
    assert block is not None, day
    return re.findall(r'<li class="cell [^"]*" data-state="([^"]+)"', block.group(1))


def test_the_week_band_is_the_members_week_too(clock: FrozenClock) -> None:
    member = make_member("alice", in_team=True)
    alone = make_member("bob", in_team=False)
    for person, evening in ((member, ["winding"] * 4), (alone, ["on-duty"] * 4)):
        html = str(
            PageClient(person)
            .get("/", {"band_view": "week", "band_date": "2026-12-02"})
            .content.decode()
        )
        # 21:00-22:00 on the Wednesday: the team's wind-down, or (alone) working.
        assert week_cells(html, "2026-12-02")[21 * 4 : 22 * 4] == evening
        day = str(PageClient(person).get("/", {"band_date": "2026-12-02"}).content.decode())
        assert week_cells(html, "2026-12-02") == band_cells(day)
