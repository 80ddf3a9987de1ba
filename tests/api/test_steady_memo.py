"""The selectors' steady memo (``selectors.verdicts._steady``): a user's last
verdict per request, answered again with only ``at`` moved while the engine
vouches for its stretch (``engine.steady``). It must answer exactly what the
engine answers, be asked at all (a memo never used looks like one that
never errs), and never answer a new bundle (a save) or another request from
an old verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from cachetools import LRUCache

from curfew_core.engine import Overrides, RequestContext, State, decide
from curfew_core.engine.team import TeamSide, decide_member, member_sides
from curfew_core.selectors import verdicts
from curfew_core.selectors.bundles import UserBundle
from curfew_core.selectors.verdicts import NO_REQUEST, decide_for, verdict_json
from tests.api.test_answer_encoding import CONFIGS, bundle

SHANGHAI = ZoneInfo("Asia/Shanghai")
#: A Tuesday's peak, off duty, twenty seconds into its minute.
PEAK = datetime(2026, 12, 1, 10, 0, 20, tzinfo=SHANGHAI).astimezone(UTC)
ASKED = RequestContext(max_tokens=4096, session_id="s", purpose="chat")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The instants the engine was asked at through the selectors."""
    asked: list[datetime] = []

    def counting(now: datetime, *args: Any) -> Any:
        asked.append(now)
        return decide(now, *args)

    monkeypatch.setattr(verdicts, "decide", counting)
    verdicts._steady.clear()
    return asked


def answered_through_a_minute(
    user: UserBundle, truth: Callable[[datetime], Any], asked: list[datetime]
) -> None:
    """``user``'s verdicts through the rest of ``PEAK``'s minute are ``truth``'s,
    the engine asked once; the next minute (its reason names it) is decided anew."""
    for seconds in (0, 0.5, 7, 39.999):
        later = PEAK + timedelta(seconds=seconds)
        got, _ = decide_for(user, now=later, request=ASKED, repeated=True)
        assert got.state is State.OFF_DUTY
        assert got == truth(later)
        assert verdict_json(got, now=later) == verdict_json(truth(later), now=later)
    assert asked == [PEAK]
    next_minute = PEAK + timedelta(seconds=40)
    decide_for(user, now=next_minute, request=ASKED, repeated=True)
    assert asked == [PEAK, next_minute]


def test_a_later_instant_of_the_minute_is_answered_from_the_memo(counted: list[datetime]) -> None:
    user = bundle({})
    answered_through_a_minute(
        user, lambda later: decide(later, user.schedule, ASKED, user.overrides), counted
    )


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_week_of_calls_through_the_memo_answers_as_the_engine(name: str) -> None:
    user = bundle(CONFIGS[name])
    verdicts._steady.clear()
    moment = PEAK
    end = PEAK + timedelta(days=7)
    while moment < end:
        got, _ = decide_for(user, now=moment, request=ASKED, repeated=True)
        assert got == decide(moment, user.schedule, ASKED, user.overrides), moment
        state, _ = decide_for(user, now=moment)
        assert state == decide(moment, user.schedule, NO_REQUEST, user.overrides), moment
        moment += timedelta(seconds=13, microseconds=7)


def test_a_saved_schedule_or_override_is_never_answered_from_the_old_verdict(
    counted: list[datetime],
) -> None:
    user = bundle({})
    decide_for(user, now=PEAK, request=ASKED, repeated=True)
    # A save is a new bundle (the cache hands out new rows): decided anew.
    saved = bundle({"dry_run": True})
    got, _ = decide_for(saved, now=PEAK + timedelta(seconds=1), request=ASKED, repeated=True)
    assert got.dry_run
    assert got.would is not None
    overtime = dataclasses.replace(user, overrides=Overrides(PEAK + timedelta(hours=1), None, None))
    got, _ = decide_for(overtime, now=PEAK + timedelta(seconds=2), request=ASKED, repeated=True)
    assert got.state is State.ON_DUTY
    assert got.override == "overtime"
    assert len(counted) == 3


def test_another_request_a_fresh_one_and_a_what_if_are_decided_anew(
    counted: list[datetime],
) -> None:
    user = bundle({})
    decide_for(user, now=PEAK, request=ASKED, repeated=True)
    exempt = RequestContext(max_tokens=4096, session_id="s", purpose="title")
    decide_for(user, now=PEAK, request=exempt, repeated=True)
    # A request made anew per call (the proxy's) neither reads nor fills it.
    decide_for(user, now=PEAK, request=ASKED)
    decide_for(user, now=PEAK, request=ASKED)
    # "What if it were then?": a preview, decided for its own instant.
    decide_for(user, now=PEAK, request=ASKED, at=PEAK + timedelta(seconds=3), repeated=True)
    assert len(counted) == 5
    assert set(verdicts._steady) == {(user.user_id, id(ASKED)), (user.user_id, id(exempt))}


def test_an_earlier_instant_or_another_zone_is_decided_anew(counted: list[datetime]) -> None:
    user = bundle({})
    decide_for(user, now=PEAK, request=ASKED, repeated=True)
    decide_for(user, now=PEAK - timedelta(seconds=1), request=ASKED, repeated=True)
    decide_for(user, now=PEAK.astimezone(SHANGHAI), request=ASKED, repeated=True)
    assert len(counted) == 3


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # Least recently used, sized when made (issue 40): a small one stands in.
    monkeypatch.setattr(verdicts, "_steady", LRUCache(maxsize=3))
    users = [dataclasses.replace(bundle({}), user_id=number) for number in range(5)]
    for user in users:
        decide_for(user, now=PEAK)
    assert 1 <= len(verdicts._steady) <= 3


def test_a_users_new_bundle_takes_the_old_ones_place(counted: list[datetime]) -> None:
    # A save (or a reload past freshness) is a new bundle: the memo keeps one
    # a user and request, so replaced bundles are not held until it fills.
    first = bundle({})
    decide_for(first, now=PEAK, request=ASKED, repeated=True)
    saved = dataclasses.replace(first)
    again, _ = decide_for(saved, now=PEAK + timedelta(seconds=1), request=ASKED, repeated=True)
    assert len(counted) == 2  # the new bundle is decided, never answered from the old
    assert again == decide(PEAK + timedelta(seconds=1), saved.schedule, ASKED, saved.overrides)
    assert len(verdicts._steady) == 1
    assert next(iter(verdicts._steady.values()))[0] is saved


# -- a team member (issue 26): two sides combined, answered from the memo too ----------


def member(config: dict[str, Any], team: TeamSide) -> UserBundle:
    return dataclasses.replace(bundle(config), team_id=9, team=team)


#: A team whose night starts at 21:00 and goes dark at 22:00 (the member's default: 23:00).
EARLY_TEAM = TeamSide(bundle({"night": {"curfew_start": "21:00", "lights_out": "22:00"}}).schedule)


@pytest.fixture
def sides(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The instants a member's two sides were decided at through the selectors."""
    asked: list[datetime] = []

    def counting(now: datetime, *args: Any, **kwargs: Any) -> Any:
        asked.append(now)
        return member_sides(now, *args, **kwargs)

    monkeypatch.setattr(verdicts, "member_sides", counting)
    verdicts._steady.clear()
    return asked


def test_a_members_later_instant_is_answered_from_the_memo(sides: list[datetime]) -> None:
    user = member({}, EARLY_TEAM)
    answered_through_a_minute(
        user,
        lambda later: decide_member(later, user.schedule, ASKED, user.overrides, EARLY_TEAM),
        sides,  # both sides were decided once a minute
    )


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_members_week_of_calls_through_the_memo_answers_as_decide_member(name: str) -> None:
    user = member(CONFIGS[name], EARLY_TEAM)
    verdicts._steady.clear()
    moment = PEAK
    end = PEAK + timedelta(days=7)
    while moment < end:
        got, _ = decide_for(user, now=moment, request=ASKED, repeated=True)
        assert got == decide_member(moment, user.schedule, ASKED, user.overrides, EARLY_TEAM)
        state, _ = decide_for(user, now=moment)
        assert state == decide_member(
            moment, user.schedule, NO_REQUEST, user.overrides, EARLY_TEAM
        ), moment
        # A member's verdict is three of a personal one's work: a call a minute or so.
        moment += timedelta(seconds=61, microseconds=7)


def test_a_team_change_is_never_answered_from_the_old_verdict(sides: list[datetime]) -> None:
    user = member({}, TeamSide(bundle({"peak_shift": False}).schedule))
    decide_for(user, now=PEAK, request=ASKED, repeated=True)
    # The team's rows changed: the member's bundle is a new one, decided anew.
    changed = dataclasses.replace(user, team=EARLY_TEAM)
    again, _ = decide_for(changed, now=PEAK + timedelta(seconds=1), request=ASKED, repeated=True)
    assert len(sides) == 2
    assert again == decide_member(
        PEAK + timedelta(seconds=1), changed.schedule, ASKED, changed.overrides, EARLY_TEAM
    )
    # A what-if and a request made anew neither read the memo nor fill it.
    fresh = RequestContext(max_tokens=4096, session_id="s", purpose="chat")
    decide_for(changed, now=PEAK, request=ASKED, at=PEAK + timedelta(seconds=3), repeated=True)
    decide_for(changed, now=PEAK + timedelta(seconds=2), request=fresh)
    assert len(sides) == 2
    assert list(verdicts._steady) == [(changed.user_id, id(ASKED))]
    assert next(iter(verdicts._steady.values()))[0] is changed
