"""Verdicts and the status payload for one user at one instant.

The one place the server turns an engine ``Verdict`` into what it answers: the
wire models declared in ``curfew_client.wire`` (shared with the gateway client
and embedded in the OpenAPI document), never a hand-built dict.

The hot answers' bytes (``verdict_json``, ``bundle_state_json``) skip building
the model: the same fields, in the model's order, checked as the model checks
them, are written by the model's own serializer (``pydantic_core.to_json``);
a value it does not vouch for (a type or a name the model would refuse, a
float that is not finite, text that is not UTF-8) takes the model's own path,
which answers or fails as it always did. ``tests/api/test_answer_encoding.py`` holds the
two byte for byte equal over every kind of verdict and generated ones.
"""

from __future__ import annotations

import math
import threading
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any, Literal, cast, get_args

from curfew_client.wire import (
    ActionName,
    DaySegment,
    OverrideKind,
    ReasoningEffort,
    StateAnswer,
    StateName,
    Tools,
    VerdictAnswer,
    Would,
    synthetic_stream,
)
from pydantic_core import to_json

from curfew_core.engine import (
    Action,
    RequestContext,
    Schedule,
    State,
    Verdict,
    decide,
    decide_member,
    format_wall,
    member_day_plan,
)
from curfew_core.engine import day_plan as engine_day_plan
from curfew_core.engine.clock import to_wall
from curfew_core.engine.steady import Stretch, steady, steady_member
from curfew_core.engine.team import member_sides, member_verdict
from curfew_core.hot_settings import setting
from curfew_core.selectors.bundles import UserBundle, bundle_for
from curfew_core.selectors.heads_up import next_payload
from curfew_core.selectors.outlook import curfew_applies, outlook_of
from curfew_core.selectors.web import CELL_MINUTES, BandDay, band_day, band_week
from curfew_core.store.local_layer import LOCAL_LAYER_SIZE
from curfew_core.store.memos import LRU
from curfew_core.vocabulary import (
    STATE_FACES,
    capsule_words,
    progress_percent,
    reasons_in_languages,
    state_names,
)


def verdict_for(
    *,
    user_id: int,
    now: datetime,
    request: RequestContext | None = None,
    at: datetime | None = None,
) -> tuple[Verdict, UserBundle]:
    """The verdict for one model call; ``at`` asks "what if it were then?".

    An explicit ``at`` is a what-if for that instant: it replaces both the real
    clock and the time machine, so overrides are judged as of ``at`` too.
    """
    return decide_for(bundle_for(user_id), now=now, request=request, at=at)


def decide_for(
    bundle: UserBundle,
    *,
    now: datetime,
    request: RequestContext | None = None,
    at: datetime | None = None,
    repeated: bool = False,
) -> tuple[Verdict, UserBundle]:
    """``verdict_for`` with the user's bundle already in hand (the lean route
    reads it from the cache itself). ``repeated``: ``request`` is an object
    the caller keeps and asks with again (``api.hot``'s, one per body), so
    its verdicts may be answered from the steady memo (``_steady``), as those
    without a request always are; a request made anew for each call would
    only fill it."""
    overrides = bundle.overrides
    if at is not None:
        now = at
        overrides = overrides.for_what_if()
    if request is None:
        request = NO_REQUEST
    steady_memo = at is None and (repeated or request is NO_REQUEST)
    if bundle.team is None:
        if steady_memo:
            return _steady_decide(bundle, now, request), bundle
        return decide(now, bundle.schedule, request, overrides), bundle
    # A team member: the harsher of the team's schedule and their own (issue 26).
    if steady_memo:
        return _steady_member_decide(bundle, now, request), bundle
    verdict = decide_member(
        now,
        bundle.schedule,
        request,
        overrides,
        bundle.team,
        member_overtime_from=bundle.overtime_from,
    )
    return verdict, bundle


#: The request of a caller that says nothing about its call (the state route,
#: pages): one object, so their verdicts share the memo below.
NO_REQUEST = RequestContext()

#: Each user's last verdict per request, with the stretch of instants that
#: decide it again (``engine.steady``; a team member's: ``steady_member``,
#: where a member's verdict was two decisions and their combination every
#: time, about twice a personal one's cost): ``(bundle, request, verdict, stretch)``
#: by the user's id and the request's id (the entry holds the request, so its
#: id is not reused meanwhile); a user's new bundle replaces the old one's
#: entry, so the memo holds at most one bundle a user and request. A gateway
#: asks with the same request object (``api.hot`` keeps one per body) many
#: times a second: between its edges and minutes only ``at`` moves (and
#: winding's progress, by the engine's arithmetic), and deciding anew was a
#: quarter of a warm verdict. A saved
#: schedule or override is a new bundle: never answered from the old one's
#: verdict. Bounded, least recently used (issue 40), at the local layer's
#: size: a deployment's users must fit, since a pass through more users than
#: it holds (4,096 did, with 10,000 users in bench.cold_path) never hits.
_STEADY_KEPT = LOCAL_LAYER_SIZE
_steady: LRU[tuple[int, int], tuple[UserBundle, RequestContext, Verdict, Stretch]] = LRU(
    maxsize=_STEADY_KEPT
)
#: Guards this module's ``LRU`` memos (``_steady``, ``_templates``,
#: ``_plans``, ``_bands``), reads too: an ``LRU`` reorders itself on every
#: read, and verdicts are asked on the event loop and on threads (pages,
#: cold doors) at once. Only the lookup and the store are held, never the work.
_memo_lock = threading.Lock()


def _kept(
    key: tuple[int, int], bundle: UserBundle, request: RequestContext, now: datetime
) -> Verdict | None:
    """The memo's verdict for ``bundle`` and ``request`` at ``now``, inside
    its steady stretch, or ``None``."""
    with _memo_lock:
        kept = _steady.get(key)
    if kept is not None and kept[0] is bundle and kept[1] is request and now.tzinfo is UTC:
        stretch = kept[3]
        if stretch.since <= now < stretch.until:
            return stretch.verdict_at(kept[2], now)
    return None


def _steady_decide(bundle: UserBundle, now: datetime, request: RequestContext) -> Verdict:
    """``decide(now, bundle.schedule, request, bundle.overrides)``, from the
    last one's verdict inside its steady stretch."""
    key = (bundle.user_id, id(request))
    again = _kept(key, bundle, request, now)
    if again is not None:
        return again
    schedule = bundle.schedule
    overrides = bundle.overrides
    verdict = decide(now, schedule, request, overrides)
    found = steady(verdict, now, schedule, overrides)
    if found is not None:
        with _memo_lock:
            _steady[key] = (bundle, request, verdict, found)
    return verdict


def _steady_member_decide(bundle: UserBundle, now: datetime, request: RequestContext) -> Verdict:
    """``decide_member`` for the bundle's member and team, from the last one's
    verdict inside its steady stretch (``engine.steady.steady_member``): a
    member's verdict is two decisions and their combination, where a
    personal one is one."""
    key = (bundle.user_id, id(request))
    again = _kept(key, bundle, request, now)
    if again is not None:
        return again
    team = bundle.team
    assert team is not None, "a member's bundle"
    schedule = bundle.schedule
    overrides = bundle.overrides
    own, theirs = member_sides(
        now, schedule, request, overrides, team, member_overtime_from=bundle.overtime_from
    )
    verdict = member_verdict(own, theirs, schedule, request, team)
    found = steady_member(
        own, theirs, now, schedule, overrides, team, member_overtime_from=bundle.overtime_from
    )
    if found is not None:
        with _memo_lock:
            _steady[key] = (bundle, request, verdict, found)
    return verdict


def max_age(verdict: Verdict, *, now: datetime) -> int:
    """Seconds a gateway may cache ``verdict``: until the next scheduled change,
    but no longer than ``CURFEW_VERDICT_MAX_AGE`` (saves and overrides are not
    predictable)."""
    return max_age_of(verdict.valid_until, now, setting("CURFEW_VERDICT_MAX_AGE"))


def max_age_of(valid_until: datetime, now: datetime, longest: int) -> int:
    """``max_age`` of an expiry and the bound: ``min(valid_until, now + longest) - now``."""
    left = (valid_until - now).total_seconds()
    return max(0, int(left if left < longest else longest))


def _progress(verdict: Verdict) -> float | None:
    return None if verdict.progress is None else round(verdict.progress, 4)


def verdict_answer(
    verdict: Verdict, *, max_age: int | None, timezone: str | None = None
) -> VerdictAnswer:
    """The engine's verdict as the API answers it (the only mapping there is);
    ``timezone``: the user's IANA zone, the one its ``reason`` is told in."""
    would = verdict.would
    return VerdictAnswer(
        state=verdict.state.value,
        schedule_state=verdict.schedule_state.value,
        action=verdict.action.value,
        reply=verdict.reply,
        stream=None if verdict.reply is None else synthetic_stream(verdict.reply),
        max_tokens=verdict.max_tokens,
        persona=verdict.persona,
        tools=verdict.tools,
        reasoning_effort=cast(ReasoningEffort | None, verdict.reasoning_effort),
        progress=_progress(verdict),
        peak=verdict.peak,
        reason=verdict.reason,
        exempt=verdict.exempt,
        dry_run=verdict.dry_run,
        valid_until=verdict.valid_until,
        max_age=max_age,
        at=verdict.at,
        budget=verdict.budget,
        override=verdict.override,
        override_until=verdict.override_until,
        debug_at=verdict.debug_at,
        would=None if would is None else Would.model_validate(would),
        timezone=timezone,
    )


def verdict_json(verdict: Verdict, *, now: datetime, timezone: str | None = None) -> bytes:
    """``POST /api/v1/verdict``'s body: ``verdict_answer(...).model_dump_json()``,
    byte for byte, without building the model (see the module docstring).

    Twin of ``verdict_answer(...).model_dump_json()``, kept because it pays
    (issue 43): the edge bench in production's configuration served 6,475
    warm verdicts a second with it against 5,194 with the model's path
    (+24.7 %, side by side in one run); ``bench.twins``: 3.9 µs a call
    against 14.1 µs."""
    age = max_age(verdict, now=now)
    try:
        return _verdict_bytes(verdict, age, timezone)
    except _NOT_VOUCHED:
        return verdict_answer(verdict, max_age=age, timezone=timezone).model_dump_json().encode()


# -- the answers' bytes without the models ----------------------------------------------
#
# ``pydantic_core.to_json`` is the serializer ``model_dump_json`` itself ends in
# (compact, text as UTF-8, the same number formats), given the values the
# model would hand it: instants already written by ``Instant``'s own
# ``datetime.isoformat``, names as their text. The checks are the model's
# (strict): each value of the type and, for a name, among the names its field
# allows; and every one is made inline (a function call per field was a
# third of the cost).


class _Refused(Exception):
    """A value the model might refuse or write otherwise: its path decides."""


#: What sends an answer down the model's path instead (``to_json``'s own
#: failures, text that is not UTF-8, are ``ValueError``s).
_NOT_VOUCHED = (_Refused, KeyError, TypeError, ValueError, AttributeError)

_STATES = frozenset(get_args(StateName))
_ACTIONS = frozenset(get_args(ActionName))
_TOOLS = frozenset(get_args(Tools))
#: ``None`` allowed: the fields are optional.
_EFFORTS = frozenset((*get_args(ReasoningEffort), None))
_OVERRIDES = frozenset((*get_args(OverrideKind), None))
_MAYBE_INT = frozenset((int, type(None)))
_MAYBE_TEXT = frozenset((str, type(None)))
_MAYBE_FLOAT = frozenset((float, type(None)))


def _instant(value: Any) -> str:
    """As ``curfew_client.wire.Instant`` writes an aware instant."""
    if type(value) is not datetime:
        raise _Refused
    if value.tzinfo is UTC:
        return _utc_text(value)
    if value.utcoffset() is None:
        raise _Refused
    return value.isoformat()


#: ``isoformat`` of a UTC instant's whole second ("2026-12-01T18:23:05"), by
#: its fields: every answer writes two instants, and ``isoformat`` (C's
#: formatting machinery) was a tenth of an answer's bytes. Bounded, least
#: recently used (issue 40; the seconds of a few minutes): ``lru_cache``, as
#: the text is the fields' alone, so it is safe from any thread with no lock.
_UTC_SECONDS_KEPT = 1024


@lru_cache(maxsize=_UTC_SECONDS_KEPT)
def _utc_seconds(year: int, month: int, day: int, hour: int, minute: int, second: int) -> str:
    """A whole UTC second's ``isoformat`` without its offset ("2026-12-01T18:23:05")."""
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC).isoformat()[:19]


def _utc_text(value: datetime) -> str:
    """``value.isoformat()`` of an instant in ``datetime.UTC``."""
    micro = value.microsecond
    head = _utc_seconds(value.year, value.month, value.day, value.hour, value.minute, value.second)
    if micro:
        return f"{head}.{micro:06d}+00:00"
    return head + "+00:00"


def _would(would: dict[str, Any]) -> dict[str, Any]:
    """``Would.model_validate(would)``'s fields (other keys ignored, as the model does)."""
    if type(would) is not dict:
        raise _Refused
    fields = {
        "action": would["action"],
        "reply": would["reply"],
        "max_tokens": would["max_tokens"],
        "persona": would["persona"],
        "tools": would["tools"],
        "reasoning_effort": would["reasoning_effort"],
    }
    if not (
        fields["action"] in _ACTIONS
        and fields["tools"] in _TOOLS
        and fields["reasoning_effort"] in _EFFORTS
        and type(fields["reply"]) in _MAYBE_TEXT
        and type(fields["persona"]) in _MAYBE_TEXT
        and type(fields["max_tokens"]) in _MAYBE_INT
    ):
        raise _Refused
    return fields


def _verdict_fields(verdict: Verdict, age: int, timezone: str | None) -> dict[str, Any]:
    """``verdict_answer``'s fields in ``VerdictAnswer``'s order, as it writes them."""
    state = verdict.state.value
    schedule_state = verdict.schedule_state.value
    action = verdict.action.value
    reply = verdict.reply
    progress = _progress(verdict)
    _vouch_names(verdict, state, schedule_state, action)
    _vouch_values(verdict, reply, progress, age)
    override_until = verdict.override_until
    debug_at = verdict.debug_at
    would = verdict.would
    return {
        "state": state,
        "schedule_state": schedule_state,
        "action": action,
        "reply": reply,
        "stream": None if reply is None else synthetic_stream(reply),
        "max_tokens": verdict.max_tokens,
        "persona": verdict.persona,
        "tools": verdict.tools,
        "reasoning_effort": verdict.reasoning_effort,
        "progress": progress,
        "peak": verdict.peak,
        "reason": verdict.reason,
        "exempt": verdict.exempt,
        "dry_run": verdict.dry_run,
        "valid_until": _instant(verdict.valid_until),
        "max_age": age,
        "at": _instant(verdict.at),
        "budget": verdict.budget,
        "override": verdict.override,
        "override_until": None if override_until is None else _instant(override_until),
        "debug_at": None if debug_at is None else _instant(debug_at),
        "would": None if would is None else _would(would),
        "timezone": timezone,
    }


def _vouch_names(verdict: Verdict, state: str, schedule_state: str, action: str) -> None:
    """``_Refused`` unless every name field is one its field allows."""
    if not (
        state in _STATES
        and schedule_state in _STATES
        and action in _ACTIONS
        and verdict.tools in _TOOLS
        and verdict.reasoning_effort in _EFFORTS
        and verdict.override in _OVERRIDES
    ):
        raise _Refused


def _vouch_values(verdict: Verdict, reply: Any, progress: Any, age: Any) -> None:
    """``_Refused`` unless every other field is of its exact type (a finite
    ``progress``)."""
    if not (
        type(reply) in _MAYBE_TEXT
        and type(verdict.persona) in _MAYBE_TEXT
        and type(verdict.reason) is str
        and type(verdict.max_tokens) in _MAYBE_INT
        and type(verdict.budget) in _MAYBE_INT
        and type(age) is int
        and type(progress) in _MAYBE_FLOAT
        and (progress is None or math.isfinite(progress))
        and type(verdict.peak) is bool
        and type(verdict.exempt) is bool
        and type(verdict.dry_run) is bool
    ):
        raise _Refused


#: The fixed parts of verdict answers (``_verdict_bytes``), by every field
#: that is written into them: the bytes before ``progress``, those between it
#: and ``valid_until``, and those after ``at``. A verdict's fields change at
#: its edges, at most every minute or percent (its ``reason``): a gateway's
#: answers share them in between. Bounded, least recently used (issue 40),
#: behind ``_memo_lock``. Keyed by what a verdict says, not by user: users
#: on one schedule share their templates.
_TEMPLATES_KEPT = 4096
_templates: LRU[tuple[str | None, tuple[Any, ...]], tuple[bytes, bytes, bytes]] = LRU(
    maxsize=_TEMPLATES_KEPT
)


def _verdict_bytes(verdict: Verdict, age: int, timezone: str | None) -> bytes:
    """``to_json(_verdict_fields(verdict, age, timezone))``, with the fields that stay
    the same from one answer to the next written once (``_templates``): per
    answer, only ``progress``, ``valid_until``, ``max_age`` and ``at``.

    Every value in the key is checked for its exact type first (``True`` is
    ``1`` to a dict, and two equal instants in two zones are written apart:
    instants are keyed by their text), so equal keys always mean equal bytes;
    anything else takes the model's path, as before."""
    progress = verdict.progress
    if progress is not None:
        progress = round(progress, 4)
    if not (
        type(age) is int
        and type(progress) in _MAYBE_FLOAT
        and (progress is None or math.isfinite(progress))
    ):
        raise _Refused
    if type(timezone) not in _MAYBE_TEXT:
        raise _Refused
    key = (timezone, _template_key(verdict))
    with _memo_lock:
        parts = _templates.get(key)
    if parts is None:
        parts = _verdict_template(verdict, age, timezone)
        with _memo_lock:
            _templates[key] = parts
    # An instant's text is ASCII digits and ``-:.+T``: nothing to escape.
    return b"".join(
        (
            parts[0],
            b"null" if progress is None else to_json(progress),
            parts[1],
            _instant(verdict.valid_until).encode(),
            b'","max_age":',
            str(age).encode(),
            b',"at":"',
            _instant(verdict.at).encode(),
            parts[2],
        )
    )


def _template_key(verdict: Verdict) -> tuple[Any, ...]:
    """The fields ``_templates`` keys a verdict's fixed parts by (all but
    ``progress``, ``valid_until``, ``max_age`` and ``at``), each checked for its
    exact type (``_Refused`` otherwise); instants as their text."""
    state = verdict.state
    schedule_state = verdict.schedule_state
    action = verdict.action
    reply = verdict.reply
    max_tokens = verdict.max_tokens
    persona = verdict.persona
    tools = verdict.tools
    effort = verdict.reasoning_effort
    peak = verdict.peak
    reason = verdict.reason
    exempt = verdict.exempt
    dry_run = verdict.dry_run
    budget = verdict.budget
    override = verdict.override
    if not (
        type(state) is State
        and type(schedule_state) is State
        and type(action) is Action
        and type(tools) is str
        and type(effort) in _MAYBE_TEXT
        and type(override) in _MAYBE_TEXT
        and type(reply) in _MAYBE_TEXT
        and type(persona) in _MAYBE_TEXT
        and type(reason) is str
        and type(max_tokens) in _MAYBE_INT
        and type(budget) in _MAYBE_INT
        and type(peak) is bool
        and type(exempt) is bool
        and type(dry_run) is bool
    ):
        raise _Refused
    override_until = verdict.override_until
    debug_at = verdict.debug_at
    would = verdict.would
    return (
        state,
        schedule_state,
        action,
        reply,
        max_tokens,
        persona,
        tools,
        effort,
        peak,
        reason,
        exempt,
        dry_run,
        budget,
        override,
        None if override_until is None else _instant(override_until),
        None if debug_at is None else _instant(debug_at),
        None if would is None else tuple((type(v), v) for v in _would(would).values()),
    )


def _verdict_template(
    verdict: Verdict, age: int, timezone: str | None
) -> tuple[bytes, bytes, bytes]:
    """The fixed parts of ``verdict``'s answer, cut from the model's own
    serializer's output for its fields: ``{…,"reasoning_effort":…,"progress":``,
    ``,"peak":…,"dry_run":…,"valid_until":"`` and ``","budget":…}`` (after
    ``at``'s text)."""
    fields = _verdict_fields(verdict, age, timezone)
    names = list(fields)
    head = to_json({name: fields[name] for name in names[: names.index("progress")]})
    middle = to_json(
        {name: fields[name] for name in names[names.index("peak") : names.index("valid_until")]}
    )
    tail = to_json({name: fields[name] for name in names[names.index("budget") :]})
    return (
        head[:-1] + b',"progress":',
        b"," + middle[1:-1] + b',"valid_until":"',
        b'",' + tail[1:],
    )


def _overtime_left(override: str | None, until: datetime | None, now: datetime) -> int | None:
    """A state's ``overtime_left``: whole seconds of overtime still to run, or
    ``None`` when no overtime is in force (both writers of a state read it here)."""
    if override != "overtime" or until is None:
        return None
    return max(0, int((until - now).total_seconds()))


def _state_fields(verdict: Verdict, bundle: UserBundle, *, now: datetime) -> dict[str, Any]:
    """``_state_answer``'s fields but ``day`` (the last), in ``StateAnswer``'s order."""
    state = verdict.state.value
    schedule_state = verdict.schedule_state.value
    progress = _progress(verdict)
    override = verdict.override
    override_until = verdict.override_until
    config = bundle.config
    if not (
        state in _STATES
        and schedule_state in _STATES
        and override in _OVERRIDES
        and type(verdict.reason) is str
        and type(verdict.reply) in _MAYBE_TEXT
        and type(verdict.budget) in _MAYBE_INT
        and type(progress) in _MAYBE_FLOAT
        and (progress is None or math.isfinite(progress))
        and type(verdict.peak) is bool
        and type(verdict.dry_run) is bool
        and type(config["timezone"]) is str
        and type(config["enabled"]) is bool
    ):
        raise _Refused
    debug_at = verdict.debug_at
    return {
        "state": state,
        "schedule_state": schedule_state,
        "reason": verdict.reason,
        "progress": progress,
        "budget": verdict.budget,
        "reply": verdict.reply,
        "peak": verdict.peak,
        "override": override,
        "override_until": None if override_until is None else _instant(override_until),
        "overtime_left": _overtime_left(override, override_until, now),
        "forced": override == "off",
        "debug_at": None if debug_at is None else _instant(debug_at),
        "at": _instant(verdict.at),
        "valid_until": _instant(verdict.valid_until),
        "timezone": config["timezone"],
        "enabled": config["enabled"],
        "dry_run": verdict.dry_run,
    }


def _day_json(plan: list[dict[str, Any]]) -> bytes:
    """A day plan as ``StateAnswer.day`` writes it."""
    day = [
        {
            "start": segment["start"],
            "end": segment["end"],
            "state": segment["state"],
            "peak": segment["peak"],
        }
        for segment in plan
    ]
    for segment in day:
        if not (
            type(segment["start"]) is str
            and type(segment["end"]) is str
            and segment["state"] in _STATES
            and type(segment["peak"]) is bool
        ):
            raise _Refused
    return to_json(day)


def verdict_payload(verdict: Verdict, *, now: datetime, timezone: str) -> dict[str, Any]:
    """The API's JSON for a verdict as a dict (for pages that show it);
    ``timezone``: the user's zone (a team member's own), as the API names it."""
    return verdict_answer(verdict, max_age=max_age(verdict, now=now), timezone=timezone).model_dump(
        mode="json"
    )


#: Day plans per (built schedule, local date): a plan only changes with the
#: schedule, and every capsule of a user asks for the same one at each push.
#: Keyed by the identity of the built ``Schedule`` (a new one per saved
#: version); the entry keeps the object, so an ``id`` is never reused under it.
#: Bounded, least recently used (issue 40), behind ``_memo_lock``. Keyed by
#: built schedule (shared by everyone on the same settings), not by user.
_PLAN_MEMO_SIZE = 4096
_plans: LRU[tuple[int, date, int], _Plan] = LRU(maxsize=_PLAN_MEMO_SIZE)


class _Plan:
    """A memo entry: the schedule it was built from, its segments, and their
    JSON (``StateAnswer.day``), written the first time an answer asks."""

    __slots__ = ("day", "schedule", "segments", "team")

    def __init__(
        self, schedule: Schedule, segments: list[dict[str, Any]], team: Schedule | None = None
    ) -> None:
        self.schedule = schedule
        self.segments = segments
        self.team = team
        self.day: bytes | None = None


def band_team(bundle: UserBundle) -> Schedule | None:
    """The team schedule a user's day is drawn with: a team member's day is
    the two schedules together (harsher wins), as their verdicts are; the
    state API's ``day``, the capsule's band and the overview's bands all
    read it here."""
    return bundle.team.schedule if bundle.team is not None else None


def user_band(
    bundle: UserBundle, day: date, *, now: datetime | None = None, view: str = "day"
) -> list[BandDay]:
    """The overview's day (or week) band of the user: ``band_day`` with
    ``band_team``, the very cells and plan ``capsule_band`` and the state
    API's ``day`` are drawn from (``engine.day_band`` and
    ``engine.member_day_plan`` walk the same member segments)."""
    team = band_team(bundle)
    if view == "week":
        return band_week(bundle.schedule, day, now=now, team=team)
    return [band_day(bundle.schedule, day, now=now, team=team)]


def _plan(bundle: UserBundle, at: datetime) -> _Plan:
    tz = bundle.schedule.timezone
    wall = to_wall(at, tz)
    # A team member's plan is the two schedules together (harsher wins), as
    # their verdicts are: keyed by both built schedules.
    team = band_team(bundle)
    key = (id(bundle.schedule), wall.date(), id(team))
    with _memo_lock:
        hit = _plans.get(key)
    if hit is not None and hit.schedule is bundle.schedule and hit.team is team:
        return hit
    drawn = (
        engine_day_plan(bundle.schedule, wall.date())
        if team is None
        else member_day_plan(bundle.schedule, team, wall.date())
    )
    plan = _Plan(
        bundle.schedule,
        [
            {
                "start": format_wall(seg.start),
                "end": format_wall(seg.end),
                "state": seg.state.value,
                "peak": seg.peak,
            }
            for seg in drawn
        ],
        team,
    )
    with _memo_lock:
        _plans[key] = plan
    return plan


def day_plan(bundle: UserBundle, at: datetime) -> list[dict[str, Any]]:
    """The schedule's segments for the local day containing ``at``."""
    # Callers get their own lists: a payload may be mutated before it is sent.
    return [dict(segment) for segment in _plan(bundle, at).segments]


def state_answer(*, user_id: int, now: datetime) -> StateAnswer:
    """What a status display needs (``GET /api/v1/state`` and the capsule)."""
    verdict, bundle = verdict_for(user_id=user_id, now=now)
    return _state_answer(verdict, bundle, now=now)


def _state_answer(verdict: Verdict, bundle: UserBundle, *, now: datetime) -> StateAnswer:
    return StateAnswer(
        state=verdict.state.value,
        schedule_state=verdict.schedule_state.value,
        reason=verdict.reason,
        progress=_progress(verdict),
        budget=verdict.budget,
        reply=verdict.reply,
        peak=verdict.peak,
        override=verdict.override,
        override_until=verdict.override_until,
        overtime_left=_overtime_left(verdict.override, verdict.override_until, now),
        forced=verdict.override == "off",
        debug_at=verdict.debug_at,
        at=verdict.at,
        valid_until=verdict.valid_until,
        timezone=bundle.config["timezone"],
        enabled=bundle.config["enabled"],
        dry_run=verdict.dry_run,
        day=[DaySegment.model_validate(segment) for segment in day_plan(bundle, verdict.at)],
    )


def state_payload(*, user_id: int, now: datetime) -> dict[str, Any]:
    """``state_answer`` as JSON-ready data (the API, the capsule's socket and page)."""
    return state_answer(user_id=user_id, now=now).model_dump(mode="json")


def state_json(*, user_id: int, now: datetime) -> bytes:
    """``state_answer``'s JSON body (``GET /api/v1/state``)."""
    return bundle_state_json(bundle_for(user_id), now=now)


def bundle_state_json(bundle: UserBundle, *, now: datetime) -> bytes:
    """``state_json`` with the user's bundle already in hand:
    ``_state_answer(...).model_dump_json()``, byte for byte, without building
    the model (see the module docstring).

    Its ``_state_json`` is the twin of ``_state_answer(...).model_dump_json()``,
    kept because ``bench.twins`` shows it pays: 6.6 µs a call against the
    model's 24.1 µs (issue 43), a quarter of a warm state's own work and
    more than the verdict's writer saves (+24.7 % on the edge bench)."""
    verdict, _ = decide_for(bundle, now=now)
    return _state_json(verdict, bundle, now=now)


def _state_json(verdict: Verdict, bundle: UserBundle, *, now: datetime) -> bytes:
    try:
        plan = _plan(bundle, verdict.at)
        if plan.day is None:
            plan.day = _day_json(plan.segments)
        head = to_json(_state_fields(verdict, bundle, now=now))
        return b"".join((head[:-1], b',"day":', plan.day, b"}"))
    except _NOT_VOUCHED:
        return _state_answer(verdict, bundle, now=now).model_dump_json().encode()


def overtime_held(verdict: Verdict) -> bool:
    """Whether an overtime is in force but the engine's state is not working
    normally: only a team's night, which the team's policy keeps, holds
    through a member's overtime. The capsule and the Now card say so."""
    return verdict.override == "overtime" and verdict.state is not State.ON_DUTY


def overtime_held_by(verdict: Verdict) -> Literal["peak", "night"] | None:
    """What keeps an overtime in force from holding (``overtime_held``): the
    team's peak hours (off duty) or its night (sleepy, asleep); ``None`` when
    it holds. The capsule and the Now card say it in these words."""
    if not overtime_held(verdict):
        return None
    return "peak" if verdict.state is State.OFF_DUTY else "night"


#: What a capsule's payload adds to the API's state fields: the words it shows.
CAPSULE_WORDS = frozenset(
    {"percent", "names", "face", "reasons", "next", "words", "overtime_held", "overtime_held_by"}
)
#: The capsule's 24-hour band, sent only to capsules that ask (``band=24h``).
CAPSULE_BAND = "band"
#: The values ``band`` may take (one today: the whole local day).
CAPSULE_BANDS = ("24h",)

#: Bands per (built schedule, local date), as ``_plans``: every capsule of a
#: user that shows the band asks for the same one at each push. Bounded, least
#: recently used (issue 40), behind ``_memo_lock``.
_bands: LRU[tuple[int, date, int], tuple[Schedule, Schedule | None, dict[str, Any]]] = LRU(
    maxsize=_PLAN_MEMO_SIZE
)


def capsule_band(bundle: UserBundle, at: datetime) -> dict[str, Any]:
    """The local day containing ``at`` as the settings page draws it
    (``selectors.web.band_day``: the same 96 quarter-hour cells), sent as runs.

    ``{"date": "2026-09-29", "step": 15, "runs": [["winding", 12], ...],
    "names": {"winding": {"en": "Winding down", "zh": "…"}, ...}}``: each run
    is a state and how many consecutive cells of ``step`` minutes it covers,
    from local midnight (the counts add up to the day's cells); ``names`` names
    the states in it (``vocabulary.state_names``) for the band's label. Runs
    keep it small (the default schedule's band is under 500 bytes with its
    names; the 96 states spelled out would be 1.2 kB alone). Overrides are not
    in it, as on the page's band: it is what the schedule says (a team
    member's: what both schedules say, harsher wins).
    """
    day = to_wall(at, bundle.schedule.timezone).date()
    # A team member's band is the two schedules together, as their plan is.
    team = band_team(bundle)
    key = (id(bundle.schedule), day, id(team))
    with _memo_lock:
        hit = _bands.get(key)
    if hit is not None and hit[0] is bundle.schedule and hit[1] is team:
        band = hit[2]
    else:
        runs: list[list[Any]] = []
        for cell in band_day(bundle.schedule, day, team=team).cells:
            if runs and runs[-1][0] == cell.state:
                runs[-1][1] += 1
            else:
                runs.append([cell.state, 1])
        band = {
            "date": day.isoformat(),
            "step": CELL_MINUTES,
            "runs": runs,
            "names": {state: state_names(state) for state in dict.fromkeys(r[0] for r in runs)},
        }
        with _memo_lock:
            _bands[key] = (bundle.schedule, team, band)
    # Callers get their own copy: a payload may be mutated before it is sent.
    return {
        **band,
        "runs": [list(run) for run in band["runs"]],
        "names": {state: dict(names) for state, names in band["names"].items()},
    }


def capsule_payload(*, user_id: int, now: datetime, band: bool = False) -> dict[str, Any]:
    """What a capsule is sent (socket and polling): ``state_payload`` plus the words
    it shows, so it keeps no vocabulary of its own that could drift from the page's.

    ``percent`` is ``vocabulary.progress_percent`` of the engine's progress, the
    very number the page shows for the same instant (``null`` when not winding);
    ``names`` is the state's name in every language of the site
    (``vocabulary.state_names``), ``face`` its face (``vocabulary.STATE_FACES``),
    ``reasons`` the reason in each (``vocabulary.reasons_in_languages``). The
    API's state answer stays the wire model.
    With ``band``, also ``band``: the local day's 24-hour band (``capsule_band``).
    """
    return bundle_capsule_payload(bundle_for(user_id), now=now, band=band)


def bundle_capsule_payload(
    bundle: UserBundle, *, now: datetime, band: bool = False
) -> dict[str, Any]:
    """``capsule_payload`` with the user's bundle already in hand (a team's
    capsules, their rows read together: ``realtime.states.read_states``)."""
    verdict, _ = decide_for(bundle, now=now)
    payload = _state_answer(verdict, bundle, now=now).model_dump(mode="json")
    payload["percent"] = progress_percent(verdict.progress)
    payload["names"] = state_names(verdict.state.value)
    # Its face (plain text), from the same row as its name (``vocabulary.STATE_WORDS``).
    payload["face"] = STATE_FACES[verdict.state.value]
    # The reason in each language, for the capsule's tooltip (``reason`` stays the engine's).
    payload["reasons"] = reasons_in_languages(verdict.reason)
    # The words beside the name (the budget, until when, only watching), in each language.
    payload["words"] = capsule_words()
    # An overtime in force that does not hold: the capsule names the
    # engine's state, the overtime beside it.
    payload["overtime_held"] = overtime_held(verdict)
    payload["overtime_held_by"] = overtime_held_by(verdict)
    # What changes next and when, with the heads-up's words (``selectors.heads_up``).
    # The engine's next change with the user's full inputs (a team's side too);
    # under pretend, from the pretended moment the capsule's clock counts from.
    outlook = outlook_of(bundle, now=now, at=verdict.debug_at)
    # A member whose own schedule is off still has the team's (harsher wins).
    payload["next"] = next_payload(verdict, outlook, enabled=curfew_applies(bundle))
    if band:
        payload[CAPSULE_BAND] = capsule_band(bundle, verdict.at)
    return payload
