"""One truth (issue 39), held over drawn accounts: every statement the
overview, the heads-up (page and capsule), ``GET /api/v1/state`` and
``curfew status`` make about now and what comes next is what
``decide_member`` says at those instants.

Drawn: a person's own night (and a weekday's own wake-up), peak hours on or
off, exemptions, a dry run; in a team or not (the control group: one
person), the team's night, its policy (members' exemptions, members'
overtime) and a release night; one override (overtime, off, or pretend) and
the real instant. Then:

- the badge is the verdict's state;
- the next-change line's instant is the first the state differs: the verdict
  at it differs from now's, every probe before it agrees (a change line is
  missing only when nothing changes within 30 hours);
- each step starts where the verdict takes its state;
- every band cell of the page is the state API's ``day`` cell and the
  verdict (no override: the band draws the schedules) at its midpoint;
- the heads-up (the page's facts and the capsule's ``next``) is that same
  instant, ten minutes ahead, with words exactly when less will be allowed;
- the CLI names the same change.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import TestCase
from django.utils import translation
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from curfew_core.engine import Overrides, State, Verdict
from curfew_core.engine.effective import PLAIN_CALL
from curfew_core.engine.team import TeamSide, decide_member
from curfew_core.models import Team
from curfew_core.schedules.config import ConfigError
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors.bundles import UserBundle, bundle_for
from curfew_core.selectors.heads_up import LEAD
from curfew_core.selectors.verdicts import capsule_payload
from curfew_core.services import teams as team_services
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import TeamError
from tests.api.conftest import FrozenClock, local
from tests.web.test_one_truth_overview import (
    api_state,
    badge,
    band_cells,
    cells_of,
    cli_status,
    heads_up,
    overview,
)

pytestmark = pytest.mark.django_db

#: Monday 2026-11-30, midnight: the drawn instants fall in the week after it.
MONDAY = local("2026-11-30 00:00")
US = dt.timedelta(microseconds=1)
QUARTER = dt.timedelta(minutes=15)
HORIZON = dt.timedelta(hours=30)
ORDER = list(State)

_names = itertools.count()


def _hhmm(minutes: int) -> str:
    minutes %= 24 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@st.composite
def nights(draw: st.DrawFn) -> dict[str, Any]:
    """A night and its curve: sleepy, asleep and up again, in that order round the clock."""
    start = draw(st.sampled_from([18, 19, 20, 21, 22, 23, 24, 25])) * 60 + draw(
        st.sampled_from([0, 30])
    )
    lights_out = start + draw(st.sampled_from([30, 60, 120, 240]))
    wake_up = lights_out + draw(st.sampled_from([60, 240, 360, 600]))
    config: dict[str, Any] = {
        "curfew_start": _hhmm(start),
        "lights_out": _hhmm(lights_out),
        "wake_up": _hhmm(wake_up),
        "anchors": [[_hhmm(start), 2048], [_hhmm(lights_out), 64]],
        "peak_shift": draw(st.booleans()),
    }
    if draw(st.booleans()):
        # A weekday with its own wake-up (a night belongs to its evening).
        day = draw(st.sampled_from(["mon", "tue", "wed", "thu", "fri", "sat", "sun"]))
        config["weekdays"] = {day: {"wake_up": _hhmm(wake_up + draw(st.sampled_from([-60, 60])))}}
    return config


@st.composite
def accounts(draw: st.DrawFn) -> dict[str, Any]:
    now = MONDAY + dt.timedelta(minutes=draw(st.integers(0, 7 * 24 * 60 - 1)))
    own = draw(nights())
    own["exempt_purposes"] = draw(st.sampled_from([[], ["title"], ["title", "summary"]]))
    own["apply_to_subagents"] = draw(st.booleans())
    own["dry_run"] = draw(st.sampled_from([False, False, False, True]))
    # Their own curfew switched off: a team's still applies (the control: alone, none).
    own["enabled"] = draw(st.sampled_from([True, True, True, False]))
    team = None
    if draw(st.booleans()):
        team = {
            "config": draw(nights()),
            "policy": {
                "members_may_exempt": draw(st.booleans()),
                "member_overtime_minutes": draw(st.sampled_from([0, 30, 120])),
            },
            "release": draw(st.one_of(st.none(), st.sampled_from([20, 90, 300]))),
        }
    override = draw(
        st.one_of(
            st.none(),
            st.tuples(st.just("overtime"), st.sampled_from([15, 45, 150])),
            st.just(("off", 0)),
            st.tuples(st.just("pretend"), st.integers(0, 7 * 24 * 60 - 1)),
        )
    )
    if team is not None and team["release"] is not None and override and override[0] == "pretend":
        # A release night is measured on the real clock, a pretend on the
        # pretended one: the two together are not one moment to tell from.
        team["release"] = None
    return {"now": now, "own": own, "team": team, "override": override}


@contextmanager
def committed() -> Iterator[None]:
    """The services' cache drops run as a real commit would run them."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        yield


def make(account: dict[str, Any], clock: FrozenClock) -> User:
    number = next(_names)
    person = User.objects.create_user(f"p{number}", password="correct horse battery")
    with committed():
        try:
            schedule_update(user=person, changes=account["own"], source="test", actor=person)
        except ConfigError:
            assume(False)
    team = account["team"]
    if team is not None:
        admin = User.objects.create_user(f"a{number}")
        with committed():
            made: Team = team_services.team_create(name=f"t{number}", admin=admin)
            team_services.member_add(team=made, user=person)
        with committed():
            try:
                team_services.team_schedule_update(
                    team=made, changes={**team["config"], **team["policy"]}, actor=admin
                )
            except (ConfigError, TeamError):
                assume(False)
        if team["release"] is not None:
            with committed():
                team_services.team_overtime_set(
                    team=made,
                    now=clock.now,
                    duration=dt.timedelta(minutes=team["release"]),
                    actor=admin,
                )
    override = account["override"]
    if override is not None:
        kind, amount = override
        if kind == "overtime":
            words = ["overtime", f"{amount}m"]
        elif kind == "off":
            words = ["off"]
        else:
            moment = MONDAY + dt.timedelta(minutes=amount)
            words = ["debug", moment.strftime("%Y-%m-%d %H:%M")]
        with committed():
            override_apply(user=person, command=from_words(words), now=clock.now, actor=person)
    return person


def verdict_at(bundle: UserBundle, instant: dt.datetime, overrides: Overrides) -> Verdict:
    return decide_member(
        instant,
        bundle.schedule,
        PLAIN_CALL,
        overrides,
        bundle.team,
        member_overtime_from=bundle.overtime_from,
    )


def state_at(bundle: UserBundle, instant: dt.datetime, overrides: Overrides) -> State:
    return verdict_at(bundle, instant, overrides).state


def told_from(bundle: UserBundle, now: dt.datetime) -> tuple[dt.datetime, Overrides]:
    """The moment what comes next is told from, and the overrides it is
    read with: now, or under pretend the pretended moment (the page's and
    the capsule's clocks count from it) without the time machine."""
    debug_at = bundle.overrides.debug_at_now(now)
    if debug_at is None:
        return now, bundle.overrides
    held = bundle.overrides
    return debug_at, Overrides(held.overtime_until, held.forced_off_until, None)


def attr(html: str, element_id: str, name: str) -> str | None:
    match = re.search(rf'id="{element_id}"[^>]*?{name}="([^"]*)"', html)
    return None if match is None else match.group(1)


def step_facts(html: str) -> list[tuple[str, dt.datetime]]:
    block = re.search(r'<ol class="steps" id="now-steps".*?</ol>', html, re.S)
    if block is None:
        return []
    return [
        (state, dt.datetime.fromisoformat(at))
        for state, at in re.findall(
            r'<li class="step" data-state="([^"]+)" data-side="[^"]*" data-at="([^"]+)"',
            block.group(0),
        )
    ]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(account=accounts())
def test_every_surface_says_what_the_verdicts_do(account: dict[str, Any]) -> None:
    note(repr(account))
    clock = FrozenClock(account["now"])
    with mock.patch("django.utils.timezone.now", side_effect=clock), translation.override("en"):
        person = make(account, clock)
        now = clock.now
        bundle = bundle_for(person.pk)
        html = overview(person)
        state = api_state(person)
        capsule = capsule_payload(user_id=person.pk, now=now)
        cli = cli_status(person)

    # The badge, the state API and the CLI: the verdict now.
    verdict_now = state_at(bundle, now, bundle.overrides)
    assert badge(html) == state["state"] == verdict_now.value
    assert cli.startswith(f"{verdict_now.value} — ")

    # Something may be held back: their own curfew is on, or a team's applies.
    applies = bool(bundle.config["enabled"]) or bundle.team is not None

    # What comes next, from the moment it is told from.
    start, overrides = told_from(bundle, now)
    first = state_at(bundle, start, overrides)
    at_text = attr(html, "now-next", "data-at")
    change: dt.datetime | None = None
    if at_text:
        change = dt.datetime.fromisoformat(at_text)
        assert start < change <= start + HORIZON
        assert state_at(bundle, change, overrides) is not first
        assert state_at(bundle, change - US, overrides) is first
        probe = start
        while probe < change:
            assert state_at(bundle, probe, overrides) is first, probe
            probe += QUARTER
    elif applies:
        probe = start
        while probe <= start + HORIZON - QUARTER:
            assert state_at(bundle, probe, overrides) is first, probe
            probe += QUARTER

    # Each step starts where the verdicts take its state.
    steps = step_facts(html)
    if applies:
        assert steps, "no steps"
        assert steps[0] == (first.value, start)
        for (before, _), (after, begins) in itertools.pairwise(steps):
            assert state_at(bundle, begins, overrides).value == after
            assert state_at(bundle, begins - US, overrides).value == before
        if change is not None and len(steps) > 1:
            assert steps[1][1] <= change

    # Every band cell: the page, the state API's day and the verdict (the
    # band draws the schedules, without overrides) at the cell's midpoint.
    cells = band_cells(html)
    assert cells == cells_of(state["day"])
    plain = Overrides()
    drawn_team = bundle.team
    if drawn_team is not None:
        drawn_team = TeamSide(drawn_team.schedule, drawn_team.policy)
    wall = dt.datetime.fromisoformat(state["at"]).astimezone(bundle.schedule.timezone)
    midnight = wall.replace(hour=0, minute=0, second=0, microsecond=0)
    for index, cell in enumerate(cells):
        middle = midnight + index * QUARTER + QUARTER / 2
        verdict = decide_member(
            middle,
            bundle.schedule,
            PLAIN_CALL,
            plain,
            drawn_team,
            member_overtime_from=bundle.overtime_from,
        )
        assert cell == verdict.state.value, (index, cell, verdict.reason)

    # The heads-up: the page's facts and the capsule's, at the same change.
    nxt = capsule["next"]
    assert heads_up(html)["next"] == nxt
    # Nothing will be held back in a dry run (a member's: only if the
    # team's verdict is one too), or nothing changes soon: no heads-up.
    quiet = verdict_at(bundle, now, bundle.overrides).dry_run
    if not applies or quiet or change is None:
        assert nxt is None
    else:
        assert nxt is not None
        at = dt.datetime.fromisoformat(nxt["at"])
        assert at == change
        assert nxt["state"] == state_at(bundle, change, overrides).value
        assert dt.datetime.fromisoformat(nxt["heads_up_at"]) == change - LEAD
        harsher = ORDER.index(State(nxt["state"])) > ORDER.index(first)
        assert (nxt["words"] is not None) == harsher

    # The CLI names the same change, to the minute.
    if change is not None and applies:
        when = change.astimezone(bundle.schedule.timezone).strftime("%Y-%m-%d %H:%M")
        assert f"next: {state_at(bundle, change, overrides).value} (" in cli
        assert f"at {when}" in cli
    else:
        assert "next:" not in cli
