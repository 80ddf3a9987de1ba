"""The schedule the engine decides from, already validated and resolved.

These are plain frozen values. Parsing and validating user input into them is
``curfew_core.schedules.config``'s job; the engine trusts what it is given.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, tzinfo
from fractions import Fraction
from typing import Protocol
from zoneinfo import ZoneInfo

from curfew_core.engine.clock import WallTime, cyclic_span


class Curve(enum.StrEnum):
    LINEAR = "linear"
    STEP = "step"
    EASE_IN = "ease_in"


class HolidayLookup(Protocol):
    """Answers "is this local date a holiday, and which?" and "is it a workday
    although a weekend or holiday, and which?" (``None``: not one).

    The engine needs only this; the app wraps the ``holidays`` package and the
    user's extra dates behind it, so no holiday table lives in the engine. A
    date named a workday (a make-up workday, 调休) is never valley, whatever
    ``holiday_name`` says: the lookup settles which of the user's and the
    public calendar's dates wins before it answers.
    """

    def holiday_name(self, day: date) -> str | None: ...

    def workday_name(self, day: date) -> str | None: ...


class NoHolidays:
    def holiday_name(self, day: date) -> str | None:
        return None

    def workday_name(self, day: date) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class Anchor:
    at: WallTime
    tokens: int


@dataclass(frozen=True, slots=True)
class NightTimes:
    """One night: winding from ``curfew_start``, lights-out from ``lights_out``
    until ``wake_up``. A night belongs to the evening it starts on."""

    curfew_start: WallTime
    lights_out: WallTime
    wake_up: WallTime

    @property
    def winding_minutes(self) -> int:
        return cyclic_span(self.curfew_start, self.lights_out)

    @property
    def dark_minutes(self) -> int:
        return cyclic_span(self.lights_out, self.wake_up)

    @property
    def starts_next_day(self) -> bool:
        """The wake-up time marks where a day begins: a curfew start earlier on
        the dial than wake-up (``00:30`` with wake-up ``09:00``) is after
        midnight, still the same evening's night."""
        return self.curfew_start < self.wake_up


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What the gateway says about the model call it is about to make."""

    session_id: str | None = None
    purpose: str | None = None
    subagent: bool = False
    max_tokens: int | None = None


DEFAULT_TIER_TEXTS_EN: tuple[str, ...] = (
    "Answer normally, but do not expand beyond what was asked.",
    "Keep it brief: a few sentences, no lists, no digressions.",
    "Very short now: one or two sentences at most.",
    "Barely awake: 20 characters at most.",
)
DEFAULT_TIER_TEXTS_ZH: tuple[str, ...] = (
    "正常回答，但不要展开。",
    "简短一点：几句话，不列清单，不跑题。",
    "很短：最多一两句话。",
    "快睡着了：最多 20 个字。",
)
DEFAULT_PERSONA_EN = (
    "It is late at night and you are getting tired. Keep answers short because "
    "you are sleepy, not because you were cut off."
)
DEFAULT_PERSONA_ZH = "夜深了，你有些困了。回答简短是因为困，而不是被打断。"
#: The purposes exempt by default: a gateway's own housekeeping calls, which
#: keep a session usable and answer no one. ``title`` (naming a chat) and
#: ``compaction`` (shrinking its context) are the purposes this project's
#: examples and tests always sent; ``summary`` is the third such helper of
#: OpenCode-style agents. The seed exempted any purpose at all, so
#: ``"anything"`` passed at 04:00.
DEFAULT_EXEMPT_PURPOSES: tuple[str, ...] = ("title", "compaction", "summary")


def purpose_key(purpose: str | None) -> str | None:
    """A request's purpose as ``exempt_purposes`` holds names: trimmed and
    lowercased, ASCII only (``str.lower`` would turn the Kelvin sign into
    ``k``, so a non-ASCII purpose never matches a name), ``None`` for none."""
    if not purpose:
        return None
    key = purpose.strip(" \t")
    return key.lower() if key and key.isascii() else None


@dataclass(frozen=True, slots=True)
class Schedule:
    timezone: tzinfo = field(default_factory=lambda: ZoneInfo("Asia/Shanghai"))
    night: NightTimes = NightTimes(23 * 60, 3 * 60, 9 * 60)
    #: Per-weekday nights (0 = Monday); a missing weekday uses ``night``.
    weekdays: Mapping[int, NightTimes] = field(default_factory=dict)
    anchors: tuple[Anchor, ...] = (
        Anchor(23 * 60, 2048),
        Anchor(0, 1600),
        Anchor(1 * 60, 800),
        Anchor(2 * 60, 320),
        Anchor(3 * 60, 64),
    )
    curve: Curve = Curve.LINEAR
    peak_shift: bool = True
    peak_windows: tuple[tuple[WallTime, WallTime], ...] = ((9 * 60, 12 * 60), (14 * 60, 18 * 60))
    weekend_valley: bool = True
    holidays: HolidayLookup = field(default_factory=NoHolidays)
    off_duty_reply: str = "。"
    lights_out_reply: str = "明天再说。"
    tired_persona: str = DEFAULT_PERSONA_ZH
    tier_texts: tuple[str, ...] = DEFAULT_TIER_TEXTS_ZH
    deny_tools_when_off_duty: bool = True
    apply_to_subagents: bool = True
    winding_reasoning_effort: str | None = None
    dry_run: bool = False
    safety_max_tokens: int | None = None
    exempt_sessions: frozenset[str] = frozenset()
    #: Lowercase purpose names whose calls pass off duty (see ``purpose_key``).
    exempt_purposes: frozenset[str] = frozenset(DEFAULT_EXEMPT_PURPOSES)
    enabled: bool = True
    #: Where each anchor sits through the wind-down, exactly (0: curfew
    #: start, 1: lights-out; each after the one before): the curve's truth,
    #: which belongs to the night and not to the clock. ``anchors`` show these
    #: on the default night. Empty (or not one per anchor): read from
    #: ``anchors`` on the default night.
    positions: tuple[Fraction, ...] = ()
    #: Derived once from ``positions`` (or ``anchors`` and ``night``).
    fractions: tuple[tuple[float, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fractions", self.anchor_fractions())

    def night_for(self, weekday: int) -> NightTimes:
        return self.weekdays.get(weekday, self.night)

    def anchor_fractions(self) -> tuple[tuple[float, int], ...]:
        """Anchors placed on the winding window as fractions 0..1.

        The curve belongs to the night: ``positions`` say where each anchor
        sits through any wind-down, and every night (the default and each
        weekday with its own times) reads the same shape on its own window, so
        it starts at the top of the curve and lands on the last anchor at
        lights-out. Without positions, the anchors' clock times on the default
        night's window say it (with an empty window, the anchors' own span).
        """
        if self.positions and len(self.positions) == len(self.anchors):
            return tuple(
                (float(p), a.tokens) for p, a in zip(self.positions, self.anchors, strict=True)
            )
        return anchor_fractions(self.anchors, self.night)


def anchor_positions(anchors: Sequence[Anchor], night: NightTimes) -> tuple[Fraction, ...]:
    """``anchors`` (clock times on ``night``'s winding window) as exact places
    0..1 through it; with an empty window the anchors' own span stands in for
    it (all at 0 when they share one minute). ``anchor_fractions`` is these
    as floats; ``curve.place`` is the way back onto any night."""
    if not anchors:
        return ()
    origin = night.curfew_start
    span = night.winding_minutes
    if span == 0:
        origin = anchors[0].at
        span = cyclic_span(origin, anchors[-1].at)
    if span == 0:
        return tuple(Fraction(0) for _ in anchors)
    return tuple(Fraction(cyclic_span(origin, a.at), span) for a in anchors)


def anchor_fractions(
    anchors: tuple[Anchor, ...], night: NightTimes
) -> tuple[tuple[float, int], ...]:
    """``anchors`` (clock times on ``night``'s winding window) as fractions
    0..1 of it; with an empty window the anchors' own span stands in for it.
    The one rule for where an anchor sits on a night: the engine reads every
    weekday's curve through it, and ``curve.stretch`` moves anchors by it.
    ``anchor_positions`` as floats (a Fraction's float is the correctly
    rounded quotient, as ``int / int`` is)."""
    places = anchor_positions(anchors, night)
    return tuple((float(p), a.tokens) for p, a in zip(places, anchors, strict=True))
