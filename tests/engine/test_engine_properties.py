"""Properties over any valid configuration, any IANA zone and any instant 1970-2100."""

from __future__ import annotations

import functools
import itertools
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from engine_support import PROPERTY, TICK, decision, transitions
from hypothesis import assume, given
from hypothesis import strategies as st

from curfew_core.engine import (
    Action,
    Anchor,
    Curve,
    NightTimes,
    NoHolidays,
    Overrides,
    RequestContext,
    Schedule,
    Segment,
    State,
    decide,
    parse_debug_moment,
    segments,
)
from curfew_core.engine.schedule import purpose_key


@functools.cache
def zone_names() -> list[str]:
    names = []
    for name in sorted(available_timezones()):
        try:
            ZoneInfo(name)
        except (ValueError, OSError):  # pragma: no cover - depends on the tz database
            continue
        names.append(name)
    return names


ZONES = st.sampled_from(zone_names()).map(ZoneInfo)
MINUTE = st.integers(0, 24 * 60 - 1)
INSTANTS = st.datetimes(
    min_value=datetime(1970, 1, 2),  # noqa: DTZ001 - bounds of an aware strategy
    max_value=datetime(2100, 12, 30),  # noqa: DTZ001
    timezones=st.just(UTC),
)


class EveryNth:
    """A holiday every ``n``-th day and a workday every ``m``-th (0: none):
    enough to exercise the valley rule, make-up workdays included, anywhere."""

    def __init__(self, n: int, r: int, m: int = 0) -> None:
        self.n, self.r, self.m = n, r, m

    def holiday_name(self, day: date) -> str | None:
        return "holiday" if day.toordinal() % self.n == self.r else None

    def workday_name(self, day: date) -> str | None:
        return "workday" if self.m and day.toordinal() % self.m == 0 else None


@st.composite
def nights(draw: st.DrawFn, near: int | None = None) -> NightTimes:
    """Valid nights: curfew -> lights-out -> wake-up in dial order, at most 24 h.

    With ``near`` (a wall minute) every edge may fall within two hours of it.
    """
    if near is None:
        start = draw(MINUTE)
        winding = draw(st.integers(0, 24 * 60 - 1))
        dark = draw(st.integers(0, 24 * 60 - winding))
    else:
        start = (near + draw(st.integers(-120, 120))) % (24 * 60)
        winding = draw(st.integers(0, 240))
        dark = draw(st.integers(0, 240))
    lights = (start + winding) % (24 * 60)
    return NightTimes(start, lights, (lights + dark) % (24 * 60))


#: Reply templates (issue 24 item 4): plain text, the placeholder, a typo of it
#: and stray braces, which stay text.
REPLIES = st.lists(
    st.one_of(st.text(max_size=3), st.sampled_from(["{until}", "{untill}", "{", "}", "{}"])),
    max_size=4,
).map("".join)


@st.composite
def schedules(draw: st.DrawFn, zone: tzinfo | None = None, near: int | None = None) -> Schedule:
    night = draw(nights(near))
    window = night.winding_minutes
    if window:
        origin, span = night.curfew_start, window
    else:  # no default window: the anchors' own span stands in
        origin, span = draw(MINUTE), 24 * 60 - 1
    offsets = sorted(draw(st.lists(st.integers(0, span), min_size=1, max_size=6, unique=True)))
    anchors = tuple(
        Anchor((origin + offset) % (24 * 60), draw(st.integers(1, 65536))) for offset in offsets
    )
    # The curve's exact places through the wind-down (each its own, as the
    # settings keep them), or none (read from the anchors on the default night).
    places = st.lists(
        st.fractions(0, 1, max_denominator=1440),
        min_size=len(anchors),
        max_size=len(anchors),
        unique=True,
    ).map(lambda drawn: tuple(sorted(drawn)))
    positions = draw(st.one_of(st.just(()), places))
    edge = MINUTE if near is None else st.integers(near - 90, near + 90).map(lambda m: m % 1440)
    holidays = draw(
        st.one_of(
            st.just(NoHolidays()),
            st.builds(EveryNth, st.integers(2, 30), st.integers(0, 1), st.integers(0, 9)),
        )
    )
    return Schedule(
        timezone=zone or draw(ZONES),
        night=night,
        weekdays=draw(st.dictionaries(st.integers(0, 6), nights(near), max_size=7)),
        anchors=anchors,
        positions=positions,
        curve=draw(st.sampled_from(list(Curve))),
        peak_shift=draw(st.booleans()),
        peak_windows=tuple(draw(st.lists(st.tuples(edge, edge), max_size=3))),
        weekend_valley=draw(st.booleans()),
        holidays=holidays,
        tier_texts=tuple(draw(st.lists(st.text(max_size=4), min_size=1, max_size=6))),
        off_duty_reply=draw(REPLIES),
        lights_out_reply=draw(REPLIES),
        tired_persona=draw(st.text(max_size=6)),
        deny_tools_when_off_duty=draw(st.booleans()),
        apply_to_subagents=draw(st.booleans()),
        winding_reasoning_effort=draw(st.sampled_from([None, "low"])),
        dry_run=draw(st.booleans()),
        safety_max_tokens=draw(st.one_of(st.none(), st.integers(1, 10_000))),
        exempt_sessions=frozenset(draw(st.sets(st.sampled_from(["a", "b"])))),
        exempt_purposes=frozenset(
            draw(st.sets(st.sampled_from(["title", "compaction", "summary"])))
        ),
        enabled=draw(st.booleans()),
    )


REQUESTS = st.builds(
    RequestContext,
    session_id=st.sampled_from([None, "a", "c"]),
    purpose=st.sampled_from([None, "", "title", " Title", "anything", "\u017fummary"]),
    subagent=st.booleans(),
    max_tokens=st.one_of(st.none(), st.integers(1, 100_000)),
)


@st.composite
def overrides_for(draw: st.DrawFn, now: datetime) -> Overrides:
    offset = st.timedeltas(min_value=timedelta(hours=-2), max_value=timedelta(hours=26))
    return Overrides(
        overtime_until=draw(st.one_of(st.none(), offset.map(lambda d: now + d))),
        forced_off_until=draw(st.one_of(st.none(), offset.map(lambda d: now + d))),
        debug_at=draw(st.one_of(st.none(), INSTANTS)),
    )


def representations(now: datetime, schedule: Schedule, other: tzinfo) -> list[datetime]:
    """The same instant written in UTC, in the schedule's own zone and elsewhere."""
    return [now, now.astimezone(schedule.timezone), now.astimezone(other)]


def budget_bounds(schedule: Schedule) -> tuple[int, int]:
    tokens = [anchor.tokens for anchor in schedule.anchors]
    return min(tokens), max(tokens)


def check_verdict(now: datetime, schedule: Schedule, request: RequestContext, verdict: Any) -> None:
    assert verdict.valid_until > now
    if request.max_tokens is not None and verdict.max_tokens is not None:
        assert verdict.max_tokens <= request.max_tokens
    if verdict.budget is not None:
        low, high = budget_bounds(schedule)
        assert low <= verdict.budget <= high
    if verdict.progress is not None:
        assert 0.0 <= verdict.progress <= 1.0
        assert verdict.state is State.WINDING
    if verdict.state is State.WINDING:
        assert verdict.progress is not None
        assert verdict.budget is not None
    assert (verdict.reply is not None) == (verdict.action is Action.SHORT_CIRCUIT)
    if verdict.action is Action.CLAMP:
        assert verdict.max_tokens is not None
        assert verdict.max_tokens <= verdict.budget
    if verdict.dry_run:
        assert verdict.action is Action.PASS
        assert verdict.reply is None
        assert verdict.max_tokens is None
        assert verdict.would is not None
    if not schedule.enabled:
        assert verdict.state is State.ON_DUTY
        assert verdict.action is Action.PASS
    # Only a listed purpose exempts a call: with no other exemption in play
    # (an exempt session, a spared subagent), exempt means the purpose is listed.
    other_exemption = request.session_id in schedule.exempt_sessions or (
        request.subagent and not schedule.apply_to_subagents
    )
    if verdict.exempt and not other_exemption:
        assert purpose_key(request.purpose) in schedule.exempt_purposes


@PROPERTY
@given(schedule=schedules(), now=INSTANTS, request=REQUESTS, other=ZONES, data=st.data())
def test_decide_never_raises_and_keeps_its_promises(
    schedule: Schedule, now: datetime, request: RequestContext, other: tzinfo, data: st.DataObject
) -> None:
    check_everything(schedule, now, request, other, data.draw(overrides_for(now)))


@st.composite
def near_an_offset_change(draw: st.DrawFn) -> tuple[Schedule, datetime]:
    """A schedule whose edges sit around one of its zone's offset changes, and
    an instant near it (uniform instants almost never meet a DST jump)."""
    name = draw(st.sampled_from(zone_names()))
    year = draw(st.integers(1971, 2099))
    found = transitions(name, year)
    if not found:  # a zone without changes that year: any instant of the year
        schedule = draw(schedules(zone=ZoneInfo(name)))
        start = datetime(year, 1, 1, tzinfo=UTC)
        return schedule, start + draw(st.timedeltas(timedelta(0), timedelta(days=364)))
    change = draw(st.sampled_from(found))
    schedule = draw(schedules(zone=change.tz, near=change.middle))
    offset = draw(st.timedeltas(min_value=timedelta(hours=-6), max_value=timedelta(hours=6)))
    return schedule, change.instant + offset


@PROPERTY
@given(case=near_an_offset_change(), request=REQUESTS, other=ZONES, data=st.data())
def test_decide_around_offset_changes(
    case: tuple[Schedule, datetime], request: RequestContext, other: tzinfo, data: st.DataObject
) -> None:
    schedule, now = case
    check_everything(schedule, now, request, other, data.draw(overrides_for(now)))
    # Stepping on from there stays safe through the change.
    moment = now
    for _ in range(10):
        verdict = decide(moment, schedule)
        assert verdict.valid_until > moment
        assert decision(decide(verdict.valid_until - TICK, schedule)) == decision(verdict)
        moment = verdict.valid_until


def check_everything(
    schedule: Schedule,
    now: datetime,
    request: RequestContext,
    other: tzinfo,
    overrides: Overrides,
) -> None:
    verdicts = [
        decide(t, schedule, request, overrides) for t in representations(now, schedule, other)
    ]
    first = verdicts[0]
    check_verdict(now, schedule, request, first)
    # The instant's spelling does not matter: same decision, same expiry instant.
    for verdict in verdicts[1:]:
        assert decision(verdict) == decision(first)
        assert verdict.valid_until.timestamp() == first.valid_until.timestamp()
        assert verdict.budget == first.budget
    # The decision holds up to the last microsecond before valid_until.
    last = first.valid_until - TICK
    assert decision(decide(last, schedule, request, overrides)) == decision(first)


@PROPERTY
@given(schedule=schedules(), now=INSTANTS, other=ZONES)
def test_walking_valid_until_always_moves_forward(
    schedule: Schedule, now: datetime, other: tzinfo
) -> None:
    moment = now
    for _ in range(40):
        verdict = decide(moment.astimezone(other), schedule)
        until = verdict.valid_until.astimezone(UTC)
        assert until > moment
        assert decision(decide(until - TICK, schedule)) == decision(verdict)
        moment = until


@PROPERTY
@given(
    schedule=schedules(),
    start=INSTANTS,
    length=st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=72)),
    other=ZONES,
    spelling=st.integers(0, 2),
)
def test_segments_cover_the_range_exactly(
    schedule: Schedule, start: datetime, length: timedelta, other: tzinfo, spelling: int
) -> None:
    end = start + length
    assume(end.year <= 2100)
    first = representations(start, schedule, other)[spelling]
    last = representations(end, schedule, other)[spelling]
    # Compare in UTC: ``==`` across zones is False inside a repeated hour, and
    # ``-`` on a zone-local datetime is wall-clock arithmetic.
    parts = [
        Segment(p.start.astimezone(UTC), p.end.astimezone(UTC), p.state, p.peak)
        for p in segments(first, last, schedule)
    ]
    if length == timedelta(0):
        assert parts == []
        return
    assert parts[0].start == start
    assert parts[-1].end == end
    for part, following in itertools.pairwise(parts):
        assert part.end == following.start
        assert (part.state, part.peak) != (following.state, following.peak)
    for part in parts:
        assert part.start < part.end
        for probe in (part.start, part.end - TICK):
            verdict = decide(probe, schedule)
            assert verdict.schedule_state is part.state, (probe, part)
            assert verdict.peak == part.peak, (probe, part)


@PROPERTY
@given(now=INSTANTS, zone=ZONES, minute=MINUTE, spelled_in_zone=st.booleans())
def test_debug_hh_mm_is_the_next_reading_of_the_clock(
    now: datetime, zone: tzinfo, minute: int, spelled_in_zone: bool
) -> None:
    text = f"{minute // 60:02d}:{minute % 60:02d}"
    got = parse_debug_moment(text, now=now.astimezone(zone) if spelled_in_zone else now, tz=zone)
    real = got.astimezone(UTC)
    # It reads HH:MM on the clock of the zone ...
    assert real.astimezone(zone).strftime("%H:%M") == text
    # ... from the current minute on ...
    wall = now.astimezone(zone)
    since = now - timedelta(seconds=wall.second, microseconds=wall.microsecond)
    assert real >= since
    # ... and it is the first such reading: an earlier one would be a day
    # earlier, or the other pass of a repeated hour (DST shifts are <= 2 h).
    assert real - since <= timedelta(hours=48)
    for back in range(15, 26 * 60 + 1, 15):
        earlier = real - timedelta(minutes=back)
        if earlier >= since:
            assert earlier.astimezone(zone).strftime("%H:%M") != text, earlier


def test_the_strategy_draws_every_setting_of_a_schedule() -> None:
    """The reference engine is the oracle of the fast path
    (``test_engine_fast_path.py``): it can only check what the strategy
    varies. A setting added to ``Schedule`` and not drawn here fails this
    test until it is (and the reference answers for it)."""
    import ast
    import dataclasses
    from pathlib import Path

    settings = {field.name for field in dataclasses.fields(Schedule) if field.init}
    # ``schedules`` is wrapped by ``st.composite``: read its own source.
    module = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    [strategy] = [
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef) and node.name == schedules.__name__
    ]
    calls = [
        node
        for node in ast.walk(strategy)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Schedule"
    ]
    assert calls, "the strategy builds a Schedule"
    drawn = {keyword.arg for keyword in calls[0].keywords}
    assert settings - drawn == set(), f"not drawn, so never checked: {sorted(settings - drawn)}"
