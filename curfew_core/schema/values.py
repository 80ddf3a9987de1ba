"""The values a schedule setting may take, declared once.

Limits, text shapes and the per-value parsers (JSON value in, canonical JSON
value out, ``Invalid`` naming what is wrong). ``curfew_core.schema.settings``
attaches one parser to each declared setting; ``curfew_core.schedule_config`` runs
them and the whole-config rules; the OpenAPI document serves the same limits
and patterns. Nothing here knows a setting's name.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from typing import Any, Literal, get_args

from curfew_core import calendars
from curfew_core.engine import Curve, format_wall, parse_wall

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = get_args(Weekday)
NightKey = Literal["curfew_start", "lights_out", "wake_up"]
NIGHT_KEYS: tuple[NightKey, ...] = get_args(NightKey)
ReasoningEffort = Literal["minimal", "low", "medium", "high"]
REASONING_EFFORTS: tuple[ReasoningEffort, ...] = get_args(ReasoningEffort)
MAX_TOKENS_LIMIT = 1_000_000
#: A cap below this fails reasoning models outright (they spend it thinking),
#: which is worse than no cap at all.
MIN_SAFETY_MAX_TOKENS = 256
MAX_ANCHORS = 48
MAX_TIERS = 12
MAX_TEXT = 2000
MAX_EXEMPT_SESSIONS = 1000
#: Exempt purposes are a gateway's few housekeeping helpers, not a session list.
MAX_EXEMPT_PURPOSES = 32
MAX_EXTRA_HOLIDAYS = 1000

MAX_SESSION_ID = 200
MAX_PURPOSE = 64
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
#: A purpose name: ASCII letters, digits and ``_ . -``, starting with a letter
#: or digit. Either case is accepted; names are kept (and matched) lowercase.
PURPOSE_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: A calendar date "YYYY-MM-DD" (year 0000 does not exist).
DATE_PATTERN = (
    "^([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
    "-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
)


class Invalid(ValueError):
    pass


class Unprocessable(Invalid):
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


# -- field parsers: JSON value in, canonical JSON value out ------------------


def parse_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"must be true or false, not {show(value)}")
    return value


def parse_time(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(f'must be a time of day as "HH:MM", not {show(value)}')
    if not re.fullmatch(TIME_PATTERN, value):
        # Not parse_wall alone: its ``\d`` takes any Unicode digit and its
        # ``$`` a final newline, neither of which the document's pattern does.
        raise Invalid(f"{show(value)} is not a time of day in HH:MM (00:00-23:59)")
    try:
        return format_wall(parse_wall(value))
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def text_parser(*, allow_empty: bool, limit: int = MAX_TEXT) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise Invalid(f"must be text, not {show(value)}")
        if not allow_empty and not value.strip():
            raise Invalid("must not be empty")
        if len(value) > limit:
            raise Invalid(f"is {len(value)} characters long; at most {limit}")
        return value

    return parse


def parse_positive_int(value: Any, *, floor: int = 1, alternative: str = "") -> int:
    number = whole_number(value)
    if number is None:
        raise Invalid(f"must be {alternative}a whole number of tokens, not {show(value)}")
    if number < floor or number > MAX_TOKENS_LIMIT:
        raise Invalid(
            f"must be {alternative}between {floor} and {MAX_TOKENS_LIMIT} tokens, "
            f"not {show(number)}"
        )
    return number


def parse_timezone(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME:
        raise Invalid(f'must be an IANA timezone name like "Asia/Shanghai", not {show(value)}')
    if value not in zoneinfo.available_timezones():
        raise Unprocessable(f"{show(value)} is not a known IANA timezone")
    return value


def parse_curve(value: Any) -> str:
    options = [c.value for c in Curve]
    if value not in options:
        raise Invalid(f"must be one of {', '.join(options)}, not {show(value)}")
    return str(value)


def parse_anchors(value: Any) -> list[list[Any]]:
    if not isinstance(value, list) or not value:
        raise Invalid('must be a non-empty list of ["HH:MM", tokens] rows')
    if len(value) > MAX_ANCHORS:
        raise Invalid(f"has {len(value)} rows; at most {MAX_ANCHORS}")
    rows: list[list[Any]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise Invalid(f'row {number} must be ["HH:MM", tokens], not {show(row)}')
        try:
            rows.append([parse_time(row[0]), parse_positive_int(row[1])])
        except Invalid as exc:
            raise Invalid(f"row {number}: {exc}") from None
    return rows


def parse_windows(value: Any) -> list[list[str]]:
    if not isinstance(value, list):
        raise Invalid('must be a list of ["HH:MM", "HH:MM"] pairs')
    if len(value) > MAX_WINDOWS:
        raise Invalid(f"has {len(value)} windows; at most {MAX_WINDOWS}")
    out: list[list[str]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise Invalid(f'window {number} must be ["HH:MM", "HH:MM"], not {show(row)}')
        try:
            out.append([parse_time(row[0]), parse_time(row[1])])
        except Invalid as exc:
            raise Invalid(f"window {number}: {exc}") from None
    return out


def parse_weekdays(value: Any) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise Invalid('must be an object like {"fri": {"curfew_start": "00:30"}}')
    out: dict[str, dict[str, str]] = {}
    for day, times in value.items():
        if day not in WEEKDAYS:
            raise Invalid(f"{show(day)} is not a weekday; use {', '.join(WEEKDAYS)}")
        if not isinstance(times, dict):
            raise Invalid(f"{day}: must be an object of curfew_start / lights_out / wake_up")
        unknown = sorted(set(times) - set(NIGHT_KEYS))
        if unknown:
            raise Invalid(f"{day}: unknown key {show(unknown[0])}; use {', '.join(NIGHT_KEYS)}")
        try:
            parsed: dict[str, str] = {
                key: parse_time(times[key]) for key in NIGHT_KEYS if key in times
            }
        except Invalid as exc:
            raise Invalid(f"{day}: {exc}") from None
        if parsed:
            out[day] = parsed
    return {day: out[day] for day in WEEKDAYS if day in out}


def parse_holiday_calendar(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise Invalid(f'must be a calendar code like "CN" or "US-CA", or null; not {show(value)}')
    code = calendars.canonical(value)
    if code is None:
        raise Unprocessable(f"{show(value)} is not a holiday calendar the holidays package knows")
    return code


def parse_dates(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise Invalid('must be a list of "YYYY-MM-DD" dates')
    if len(value) > MAX_EXTRA_HOLIDAYS:
        raise Invalid(f"has {len(value)} dates; at most {MAX_EXTRA_HOLIDAYS}")
    out: set[str] = set()
    for item in value:
        try:
            # Not ``len == 10`` alone: Python also reads "2026-W40-2" as a date.
            if not isinstance(item, str) or not re.fullmatch(DATE_PATTERN, item):
                raise ValueError
            out.add(dt.date.fromisoformat(item).isoformat())
        except ValueError:
            raise Invalid(f"{show(item)} is not a date as YYYY-MM-DD") from None
    return sorted(out)


def parse_tier_texts(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise Invalid("must be a non-empty list of texts")
    if len(value) > MAX_TIERS:
        raise Invalid(f"has {len(value)} tiers; at most {MAX_TIERS}")
    parse = text_parser(allow_empty=False, limit=MAX_TIER_TEXT)
    out = []
    for number, item in enumerate(value, start=1):
        try:
            out.append(parse(item))
        except Invalid as exc:
            raise Invalid(f"tier {number} {exc}") from None
    return out


def parse_reasoning_effort(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if value not in REASONING_EFFORTS:
        raise Invalid(f"must be one of {', '.join(REASONING_EFFORTS)} or null, not {show(value)}")
    return str(value)


def parse_safety_max_tokens(value: Any) -> int | None:
    if value is None:
        return None
    return parse_positive_int(
        value, floor=MIN_SAFETY_MAX_TOKENS, alternative="null (no cap, the default) or "
    )


def parse_sessions(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise Invalid("must be a list of session ids")
    if len(value) > MAX_EXEMPT_SESSIONS:
        raise Invalid(f"has {len(value)} sessions; at most {MAX_EXEMPT_SESSIONS}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_SESSION_ID:
            raise Invalid(
                f"{show(item)} is not a session id (1-{MAX_SESSION_ID} characters of text)"
            )
        if item.strip() not in out:
            out.append(item.strip())
    return out


def parse_purposes(value: Any) -> list[str]:
    """Purpose names, lowercased, in the order given; a repeat (in any case)
    is folded into the first, as a repeated session id or date is."""
    if not isinstance(value, list):
        raise Invalid('must be a list of purpose names like "title"')
    if len(value) > MAX_EXEMPT_PURPOSES:
        raise Invalid(f"has {len(value)} purposes; at most {MAX_EXEMPT_PURPOSES}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not 1 <= len(item) <= MAX_PURPOSE:
            raise Invalid(f"{show(item)} is not a purpose name (1-{MAX_PURPOSE} characters)")
        if not re.fullmatch(PURPOSE_PATTERN, item):
            raise Invalid(
                f"{show(item)} is not a purpose name: use letters a-z, digits and _ . -, "
                "starting with a letter or digit"
            )
        if item.lower() not in out:
            out.append(item.lower())
    return out
