"""The one validation layer for schedules.

The API, the settings form and the management commands all hand a mapping of
API-shaped values (snake_case keys, ``"HH:MM"`` strings, JSON types) to
``apply_changes``; it answers the complete canonical config or raises
``ConfigError`` naming every bad field, and it never half-applies. ``build``
turns a canonical config into the engine's ``Schedule``.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
import zoneinfo
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from curfew_core import calendars
from curfew_core.engine import Anchor, Curve, NightTimes, Schedule, format_wall, parse_wall
from curfew_core.engine.clock import MINUTES_PER_DAY, cyclic_span
from curfew_core.engine.schedule import (
    DEFAULT_PERSONA_EN,
    DEFAULT_PERSONA_ZH,
    DEFAULT_TIER_TEXTS_EN,
    DEFAULT_TIER_TEXTS_ZH,
)

Config = dict[str, Any]

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
NIGHT_KEYS = ("curfew_start", "lights_out", "wake_up")
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
MAX_TOKENS_LIMIT = 1_000_000
#: A cap below this fails reasoning models outright (they spend it thinking),
#: which is worse than no cap at all.
MIN_SAFETY_MAX_TOKENS = 256
MAX_ANCHORS = 48
MAX_TIERS = 12
MAX_TEXT = 2000
MAX_EXEMPT_SESSIONS = 1000
MAX_EXTRA_HOLIDAYS = 1000

MAX_SESSION_ID = 200
MAX_TIER_TEXT = 500
MAX_NAME = 64
MAX_WINDOWS = 24

# -- text shapes, declared once: the validators below use them with
# ``re.fullmatch`` and the OpenAPI document serves them as ``pattern``. Only
# ASCII classes and explicit code points, so Python's ``re`` and an ECMA-262
# engine read them alike (``\d``, ``\s`` and ``$`` differ between the two).

#: Exactly the characters ``str.isspace`` (and so ``str.strip``) treats as blank.
_BLANK_CLASS = "".join(f"\\u{code:04x}" for code in range(0x3001) if chr(code).isspace())
#: Text without NUL (PostgreSQL's jsonb cannot hold it).
TEXT_PATTERN = "^[^\\u0000]*$"
#: Text without NUL that is not blank.
NONBLANK_PATTERN = f"^[^\\u0000]*[^\\u0000{_BLANK_CLASS}][^\\u0000]*$"
#: A wall-clock time, 24-hour "HH:MM".
TIME_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
#: A calendar date "YYYY-MM-DD" (year 0000 does not exist).
DATE_PATTERN = (
    "^([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
    "-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
)

PERSONA_PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "en": (DEFAULT_PERSONA_EN, DEFAULT_TIER_TEXTS_EN),
    "zh": (DEFAULT_PERSONA_ZH, DEFAULT_TIER_TEXTS_ZH),
}

DEFAULTS: Config = {
    "enabled": True,
    "timezone": "Asia/Shanghai",
    "wake_up": "09:00",
    "curfew_start": "23:00",
    "lights_out": "03:00",
    "weekdays": {},
    "anchors": [["23:00", 2048], ["00:00", 1600], ["01:00", 800], ["02:00", 320], ["03:00", 64]],
    "curve": "linear",
    "peak_shift": True,
    "peak_windows": [["09:00", "12:00"], ["14:00", "18:00"]],
    "weekend_valley": True,
    "holiday_calendar": "CN",
    "extra_holidays": [],
    "extra_workdays": [],
    "off_duty_reply": "。",
    "lights_out_reply": "明天再说。",
    "tired_persona": DEFAULT_PERSONA_ZH,
    "tier_texts": list(DEFAULT_TIER_TEXTS_ZH),
    "deny_tools_when_off_duty": True,
    "apply_to_subagents": True,
    "winding_reasoning_effort": None,
    "dry_run": False,
    "safety_max_tokens": None,
    "exempt_sessions": [],
}
FIELDS = tuple(DEFAULTS)


class ConfigError(ValueError):
    """Bad input: ``errors`` maps each offending field to what is wrong with it.

    ``unprocessable`` names the fields whose values are well-formed (the
    OpenAPI schema admits them) but refused by a rule no schema states: the
    night times in order, anchors inside the window, a zone or calendar that
    exists. The API answers those 422 and every other refusal 400, so the
    document and the validators agree exactly on what is well-formed.
    """

    def __init__(self, errors: Mapping[str, str], unprocessable: Iterable[str] = ()) -> None:
        self.errors = dict(errors)
        self.unprocessable = frozenset(unprocessable) & set(self.errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))

    @property
    def well_formed(self) -> bool:
        """Every error is one a schema cannot state (the API's 422)."""
        return bool(self.errors) and self.unprocessable == set(self.errors)


class _Invalid(ValueError):
    pass


class _Unprocessable(_Invalid):
    """Well-formed, but refused by a rule the schema cannot state."""


#: Values quoted back in an error message are cut to this many characters,
#: so a huge bad value cannot make a huge answer.
SHOW_LIMIT = 60
#: Digits a whole number typed as text may have. More is never a token count,
#: and ``int`` refuses over 4300 digits with ValueError (CPython's DoS guard).
MAX_INT_DIGITS = 30
_INT_TEXT = re.compile(rf"[+-]?[0-9]{{1,{MAX_INT_DIGITS}}}", re.ASCII)


def show(value: Any) -> str:
    """``repr(value)`` for an error message, cut short when it is long."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOW_LIMIT else f"{text[: SHOW_LIMIT - 1]}…"


def whole_number(value: Any) -> int | None:
    """A JSON integer as an ``int``, or None. ``508.0`` is one (JSON Schema's
    ``integer`` admits it, so the validators must too); ``true`` is not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def int_from_text(text: str) -> int | None:
    """The whole number ``text`` spells in ASCII digits (sign allowed), else None.

    Never ``str.isdigit`` (it admits "²" and other digits ``int`` refuses) and
    never a bare ``int(text)`` (non-ASCII digits, and ValueError past 4300 digits).
    """
    cleaned = text.strip()
    return int(cleaned) if _INT_TEXT.fullmatch(cleaned) else None


def text_problem(text: str) -> str | None:
    """What makes ``text`` unstorable, or None.

    A lone surrogate ("\\ud800") is not Unicode text: it cannot be encoded as
    UTF-8, so every later read of a row holding it fails. PostgreSQL's jsonb
    cannot hold NUL. Both are refused before anything is written.
    """
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains invalid Unicode (a lone surrogate)"
    return None


def value_problem(value: Any) -> str | None:
    """``text_problem`` for the first bad text anywhere inside a JSON value
    (keys included), walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return problem
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


def default_config() -> Config:
    return copy.deepcopy(DEFAULTS)


def with_defaults(stored: Mapping[str, Any]) -> Config:
    """A stored config with settings added since it was saved filled in."""
    config = default_config()
    config.update(copy.deepcopy({k: v for k, v in stored.items() if k in DEFAULTS}))
    return config


# -- field parsers: JSON value in, canonical JSON value out ------------------


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"must be true or false, not {show(value)}")
    return value


def _time(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f'must be a time of day as "HH:MM", not {show(value)}')
    if not re.fullmatch(TIME_PATTERN, value):
        # Not parse_wall alone: its ``\d`` takes any Unicode digit and its
        # ``$`` a final newline, neither of which the document's pattern does.
        raise _Invalid(f"{show(value)} is not a time of day in HH:MM (00:00-23:59)")
    try:
        return format_wall(parse_wall(value))
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def _text(*, allow_empty: bool, limit: int = MAX_TEXT) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise _Invalid(f"must be text, not {show(value)}")
        if not allow_empty and not value.strip():
            raise _Invalid("must not be empty")
        if len(value) > limit:
            raise _Invalid(f"is {len(value)} characters long; at most {limit}")
        return value

    return parse


def _positive_int(value: Any, *, floor: int = 1, alternative: str = "") -> int:
    number = whole_number(value)
    if number is None:
        raise _Invalid(f"must be {alternative}a whole number of tokens, not {show(value)}")
    if number < floor or number > MAX_TOKENS_LIMIT:
        raise _Invalid(
            f"must be {alternative}between {floor} and {MAX_TOKENS_LIMIT} tokens, "
            f"not {show(number)}"
        )
    return number


def _timezone(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME:
        raise _Invalid(f'must be an IANA timezone name like "Asia/Shanghai", not {show(value)}')
    if value not in zoneinfo.available_timezones():
        raise _Unprocessable(f"{show(value)} is not a known IANA timezone")
    return value


def _curve(value: Any) -> str:
    options = [c.value for c in Curve]
    if value not in options:
        raise _Invalid(f"must be one of {', '.join(options)}, not {show(value)}")
    return str(value)


def _anchors(value: Any) -> list[list[Any]]:
    if not isinstance(value, list) or not value:
        raise _Invalid('must be a non-empty list of ["HH:MM", tokens] rows')
    if len(value) > MAX_ANCHORS:
        raise _Invalid(f"has {len(value)} rows; at most {MAX_ANCHORS}")
    rows: list[list[Any]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise _Invalid(f'row {number} must be ["HH:MM", tokens], not {show(row)}')
        try:
            rows.append([_time(row[0]), _positive_int(row[1])])
        except _Invalid as exc:
            raise _Invalid(f"row {number}: {exc}") from None
    return rows


def _windows(value: Any) -> list[list[str]]:
    if not isinstance(value, list):
        raise _Invalid('must be a list of ["HH:MM", "HH:MM"] pairs')
    if len(value) > MAX_WINDOWS:
        raise _Invalid(f"has {len(value)} windows; at most {MAX_WINDOWS}")
    out: list[list[str]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise _Invalid(f'window {number} must be ["HH:MM", "HH:MM"], not {show(row)}')
        try:
            out.append([_time(row[0]), _time(row[1])])
        except _Invalid as exc:
            raise _Invalid(f"window {number}: {exc}") from None
    return out


def _weekdays(value: Any) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise _Invalid('must be an object like {"fri": {"curfew_start": "00:30"}}')
    out: dict[str, dict[str, str]] = {}
    for day, times in value.items():
        if day not in WEEKDAYS:
            raise _Invalid(f"{show(day)} is not a weekday; use {', '.join(WEEKDAYS)}")
        if not isinstance(times, dict):
            raise _Invalid(f"{day}: must be an object of curfew_start / lights_out / wake_up")
        unknown = sorted(set(times) - set(NIGHT_KEYS))
        if unknown:
            raise _Invalid(f"{day}: unknown key {show(unknown[0])}; use {', '.join(NIGHT_KEYS)}")
        try:
            parsed = {key: _time(times[key]) for key in NIGHT_KEYS if key in times}
        except _Invalid as exc:
            raise _Invalid(f"{day}: {exc}") from None
        if parsed:
            out[day] = parsed
    return {day: out[day] for day in WEEKDAYS if day in out}


def _holiday_calendar(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise _Invalid(f'must be a calendar code like "CN" or "US-CA", or null; not {show(value)}')
    code = calendars.canonical(value)
    if code is None:
        raise _Unprocessable(f"{show(value)} is not a holiday calendar the holidays package knows")
    return code


def _dates(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise _Invalid('must be a list of "YYYY-MM-DD" dates')
    if len(value) > MAX_EXTRA_HOLIDAYS:
        raise _Invalid(f"has {len(value)} dates; at most {MAX_EXTRA_HOLIDAYS}")
    out: set[str] = set()
    for item in value:
        try:
            # Not ``len == 10`` alone: Python also reads "2026-W40-2" as a date.
            if not isinstance(item, str) or not re.fullmatch(DATE_PATTERN, item):
                raise ValueError
            out.add(dt.date.fromisoformat(item).isoformat())
        except ValueError:
            raise _Invalid(f"{show(item)} is not a date as YYYY-MM-DD") from None
    return sorted(out)


def _tier_texts(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _Invalid("must be a non-empty list of texts")
    if len(value) > MAX_TIERS:
        raise _Invalid(f"has {len(value)} tiers; at most {MAX_TIERS}")
    parse = _text(allow_empty=False, limit=MAX_TIER_TEXT)
    out = []
    for number, item in enumerate(value, start=1):
        try:
            out.append(parse(item))
        except _Invalid as exc:
            raise _Invalid(f"tier {number} {exc}") from None
    return out


def _reasoning_effort(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if value not in REASONING_EFFORTS:
        raise _Invalid(f"must be one of {', '.join(REASONING_EFFORTS)} or null, not {show(value)}")
    return str(value)


def _safety_max_tokens(value: Any) -> int | None:
    if value is None:
        return None
    return _positive_int(
        value, floor=MIN_SAFETY_MAX_TOKENS, alternative="null (no cap, the default) or "
    )


def _sessions(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise _Invalid("must be a list of session ids")
    if len(value) > MAX_EXEMPT_SESSIONS:
        raise _Invalid(f"has {len(value)} sessions; at most {MAX_EXEMPT_SESSIONS}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_SESSION_ID:
            raise _Invalid(
                f"{show(item)} is not a session id (1-{MAX_SESSION_ID} characters of text)"
            )
        if item.strip() not in out:
            out.append(item.strip())
    return out


PARSERS: dict[str, Callable[[Any], Any]] = {
    "enabled": _bool,
    "timezone": _timezone,
    "wake_up": _time,
    "curfew_start": _time,
    "lights_out": _time,
    "weekdays": _weekdays,
    "anchors": _anchors,
    "curve": _curve,
    "peak_shift": _bool,
    "peak_windows": _windows,
    "weekend_valley": _bool,
    "holiday_calendar": _holiday_calendar,
    "extra_holidays": _dates,
    "extra_workdays": _dates,
    "off_duty_reply": _text(allow_empty=False),
    "lights_out_reply": _text(allow_empty=False),
    "tired_persona": _text(allow_empty=True),
    "tier_texts": _tier_texts,
    "deny_tools_when_off_duty": _bool,
    "apply_to_subagents": _bool,
    "winding_reasoning_effort": _reasoning_effort,
    "dry_run": _bool,
    "safety_max_tokens": _safety_max_tokens,
    "exempt_sessions": _sessions,
}
assert set(PARSERS) == set(DEFAULTS)


# -- whole-config checks ------------------------------------------------------


def _night(config: Config, day: str | None = None) -> tuple[int, int, int]:
    times = {key: config[key] for key in NIGHT_KEYS}
    if day is not None:
        times.update(config["weekdays"].get(day, {}))
    return (
        parse_wall(times["curfew_start"]),
        parse_wall(times["lights_out"]),
        parse_wall(times["wake_up"]),
    )


def _night_problem(start: int, lights: int, wake: int) -> str | None:
    """The three times must come in order around the dial within one day."""
    if cyclic_span(start, lights) + cyclic_span(lights, wake) > MINUTES_PER_DAY:
        return (
            f"curfew start {format_wall(start)}, lights-out {format_wall(lights)} and "
            f"wake-up {format_wall(wake)} overlap: the night would last over 24 hours"
        )
    return None


def _check_whole(config: Config, errors: dict[str, str], changed: Iterable[str]) -> None:
    changed = list(changed)
    if "extra_holidays" not in errors and "extra_workdays" not in errors:
        both = sorted(set(config["extra_holidays"]) & set(config["extra_workdays"]))
        if both:
            # Name the list this change touched; the other was already saved.
            only_holidays = "extra_holidays" in changed and "extra_workdays" not in changed
            key = "extra_holidays" if only_holidays else "extra_workdays"
            errors[key] = (
                f"{', '.join(both)} cannot be both one of your holidays and one of your "
                "workdays; keep it in one list"
            )
    if not any(key in errors for key in NIGHT_KEYS):
        problem = _night_problem(*_night(config))
        if problem:
            # Name the time(s) this change moved; the others were already fine.
            for key in [key for key in NIGHT_KEYS if key in changed] or ["lights_out"]:
                errors[key] = problem
    if "weekdays" not in errors and not any(key in errors for key in NIGHT_KEYS):
        for day in config["weekdays"]:
            problem = _night_problem(*_night(config, day))
            if problem:
                errors["weekdays"] = f"{day}: {problem}"
                break
    if "anchors" in errors or any(key in errors for key in NIGHT_KEYS):
        return
    start, lights, _ = _night(config)
    window = cyclic_span(start, lights)
    offsets: list[int] = []
    for time_text, _tokens in config["anchors"]:
        at = parse_wall(time_text)
        offset = cyclic_span(start, at)
        if window and offset > window:
            errors["anchors"] = (
                f"{time_text} is outside the curfew window "
                f"{format_wall(start)}–{format_wall(lights)}"
            )
            return
        if offset in offsets:
            errors["anchors"] = f"{time_text} appears twice"
            return
        offsets.append(offset)
    # Canonical order: by time through the window (23:00 before 00:00).
    config["anchors"] = [
        row for _, row in sorted(zip(offsets, config["anchors"], strict=True), key=lambda p: p[0])
    ]


def apply_changes(current: Mapping[str, Any], changes: Mapping[str, Any]) -> Config:
    """Validate ``changes`` on top of ``current``; the full new config or ``ConfigError``.

    Unknown keys are errors (a typo must not be silently dropped). Nothing is
    half-applied: the caller saves the result or nothing.
    """
    if not isinstance(changes, Mapping):
        raise ConfigError({"body": "must be a JSON object of settings"})
    config = with_defaults(current)
    before = with_defaults(current)
    errors: dict[str, str] = {}
    unprocessable: set[str] = set()
    for key, value in changes.items():
        parser = PARSERS.get(key)
        if parser is None:
            errors[key if text_problem(key) is None else show(key)] = "is not a setting"
            continue
        problem = value_problem(value)
        if problem:
            errors[key] = problem
            continue
        try:
            config[key] = parser(value)
        except _Unprocessable as exc:
            errors[key] = str(exc)
            unprocessable.add(key)
        except _Invalid as exc:
            errors[key] = str(exc)
    if not errors:
        _check_whole(config, errors, [key for key in changes if config[key] != before[key]])
        unprocessable.update(errors)
    if errors:
        raise ConfigError(errors, unprocessable)
    return config


# -- into the engine ----------------------------------------------------------


def _night_times(start: str, lights: str, wake: str) -> NightTimes:
    return NightTimes(parse_wall(start), parse_wall(lights), parse_wall(wake))


def build(config: Mapping[str, Any]) -> Schedule:
    """The engine's ``Schedule`` for a canonical (already validated) config."""
    default_night = _night_times(config["curfew_start"], config["lights_out"], config["wake_up"])
    weekdays = {}
    for index, day in enumerate(WEEKDAYS):
        times = config["weekdays"].get(day)
        if times:
            merged = {key: times.get(key, config[key]) for key in NIGHT_KEYS}
            weekdays[index] = _night_times(
                merged["curfew_start"], merged["lights_out"], merged["wake_up"]
            )
    return Schedule(
        timezone=zoneinfo.ZoneInfo(config["timezone"]),
        night=default_night,
        weekdays=weekdays,
        anchors=tuple(Anchor(parse_wall(at), int(tokens)) for at, tokens in config["anchors"]),
        curve=Curve(config["curve"]),
        peak_shift=config["peak_shift"],
        peak_windows=tuple((parse_wall(a), parse_wall(b)) for a, b in config["peak_windows"]),
        weekend_valley=config["weekend_valley"],
        holidays=calendars.lookup(
            config["holiday_calendar"],
            tuple(config["extra_holidays"]),
            tuple(config["extra_workdays"]),
        ),
        off_duty_reply=config["off_duty_reply"],
        lights_out_reply=config["lights_out_reply"],
        tired_persona=config["tired_persona"],
        tier_texts=tuple(config["tier_texts"]),
        deny_tools_when_off_duty=config["deny_tools_when_off_duty"],
        apply_to_subagents=config["apply_to_subagents"],
        winding_reasoning_effort=config["winding_reasoning_effort"],
        dry_run=config["dry_run"],
        safety_max_tokens=config["safety_max_tokens"],
        exempt_sessions=frozenset(config["exempt_sessions"]),
        enabled=config["enabled"],
    )
