"""The values a schedule setting may take, declared once.

Limits, text shapes and the per-value parsers (JSON value in, canonical JSON
value out, ``Invalid`` naming what is wrong). ``curfew_core.schedules.declaration``
attaches one parser to each declared setting; ``curfew_core.schedules.config`` runs
them and the whole-config rules; the OpenAPI document serves the same limits
and patterns. Nothing here knows a setting's name.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

from curfew_core.engine import REPLY_PLACEHOLDERS, Curve, format_wall, parse_wall
from curfew_core.engine.schedule import purpose_key
from curfew_core.schedules import calendars
from curfew_core.schedules.messages import Message, message_of

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
    """A refused value; raised with a ``Message`` so a page can translate it."""


class Unprocessable(Invalid):
    """Well-formed, but refused by a rule the schema cannot state."""


class BadRows(Invalid):
    """Some rows of a list could not be read. Besides the message (every bad
    row at once), it keeps each problem and each row that did read, by row
    number: the rules between settings still check the readable rows, so a
    row typed wrong never hides another row's problem (issue 25)."""

    def __init__(
        self, problems: list[tuple[int, Message]], readable: list[tuple[int, list[Any]]]
    ) -> None:
        super().__init__(all_of([problem for _number, problem in problems]))
        self.problems = problems
        self.readable = readable


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
        return Message("contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return Message("contains invalid Unicode (a lone surrogate)")
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


class _RowProblem:
    """ "row 3: <problem>": an anchor row's problem, numbered for the API. The
    page shows the problem on the row itself, so it takes the number off
    again (``problem_of``) rather than parse the English back."""

    template = "row %(number)s: %(problem)s"

    def at(self, number: int, exc: Exception) -> Message:
        return self.of(number, message_of(exc))

    def of(self, number: int, problem: str) -> Message:
        return Message(self.template, number=number, problem=problem)

    def problem_of(self, message: str) -> str:
        if isinstance(message, Message) and message.template == self.template:
            problem: str = message.params["problem"]
            return problem
        return message


ROW_PROBLEM = _RowProblem()


def all_of(problems: list[Message]) -> Message:
    """Several problems of one field as one message ("row 1: …; row 3: …"),
    each still translatable (a ``Message`` parameter is translated too)."""
    joined = problems[0]
    for problem in problems[1:]:
        joined = Message("%(problems)s; %(problem)s", problems=joined, problem=problem)
    return joined


# -- field parsers: JSON value in, canonical JSON value out ------------------


def parse_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(Message("must be true or false, not %(value)s", value=show(value)))
    return value


def parse_time(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(Message('must be a time of day as "HH:MM", not %(value)s', value=show(value)))
    if not re.fullmatch(TIME_PATTERN, value):
        # Not parse_wall alone: its ``\d`` takes any Unicode digit and its
        # ``$`` a final newline, neither of which the document's pattern does.
        raise Invalid(
            Message("%(value)s is not a time of day in HH:MM (00:00-23:59)", value=show(value))
        )
    try:
        return format_wall(parse_wall(value))
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def text_parser(*, allow_empty: bool, limit: int = MAX_TEXT) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise Invalid(Message("must be text, not %(value)s", value=show(value)))
        if not allow_empty and not value.strip():
            raise Invalid(Message("must not be empty"))
        if len(value) > limit:
            raise Invalid(
                Message(
                    "is %(length)s characters long; at most %(limit)s",
                    length=len(value),
                    limit=limit,
                )
            )
        return value

    return parse


#: A ``{word}`` in a reply: a placeholder the engine fills, or a typo of one.
#: Any other brace (``{}``, ``{ x }``, a lone ``{``) is plain text.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", re.ASCII)
#: The placeholders a reply may use, as the page and the API list them.
ALLOWED_PLACEHOLDERS = ", ".join(f"{{{name}}}" for name in REPLY_PLACEHOLDERS)


def reply_parser() -> Callable[[Any], str]:
    """A canned reply: non-empty text whose ``{word}``s are placeholders the
    engine knows. An unknown one (``{untill}``) would reach users as written,
    so it is refused, naming it, rather than saved."""
    text = text_parser(allow_empty=False)

    def parse(value: Any) -> str:
        reply = text(value)
        for match in _PLACEHOLDER.finditer(reply):
            if match.group(1) not in REPLY_PLACEHOLDERS:
                raise Unprocessable(
                    Message(
                        "%(placeholder)s is not a placeholder; a reply may use %(allowed)s",
                        placeholder=show(match.group(0)),
                        allowed=ALLOWED_PLACEHOLDERS,
                    )
                )
        return reply

    return parse


def parse_positive_int(value: Any, *, floor: int = 1, nullable: bool = False) -> int:
    """A token count; ``nullable`` when the setting may also be null (say so)."""
    number = whole_number(value)
    if number is None:
        if nullable:
            raise Invalid(
                Message(
                    "must be null (no cap, the default) or a whole number of tokens, not %(value)s",
                    value=show(value),
                )
            )
        raise Invalid(Message("must be a whole number of tokens, not %(value)s", value=show(value)))
    if number < floor or number > MAX_TOKENS_LIMIT:
        template = (
            "must be null (no cap, the default) or between %(floor)s and %(limit)s tokens, "
            "not %(value)s"
            if nullable
            else "must be between %(floor)s and %(limit)s tokens, not %(value)s"
        )
        raise Invalid(Message(template, floor=floor, limit=MAX_TOKENS_LIMIT, value=show(number)))
    return number


def parse_timezone(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME:
        raise Invalid(
            Message(
                'must be an IANA timezone name like "Asia/Shanghai", not %(value)s',
                value=show(value),
            )
        )
    if value not in zoneinfo.available_timezones():
        raise Unprocessable(Message("%(value)s is not a known IANA timezone", value=show(value)))
    return value


def _short_list(
    value: Any, not_a_list: str, limit: int, too_many: str, *, empty: bool = True
) -> list[Any]:
    """``value`` if it is a list of at most ``limit`` items (and not empty
    unless ``empty``); otherwise ``Invalid`` with ``not_a_list`` or
    ``too_many`` (a ``%(count)s`` / ``%(limit)s`` template)."""
    if not isinstance(value, list) or not (empty or value):
        raise Invalid(Message(not_a_list))
    if len(value) > limit:
        raise Invalid(Message(too_many, count=len(value), limit=limit))
    return value


def _choice(value: Any, options: Sequence[str], not_one: str) -> str:
    """``value`` if it is one of ``options``; otherwise ``Invalid`` with
    ``not_one`` (a ``%(options)s`` / ``%(value)s`` template)."""
    if value not in options:
        raise Invalid(Message(not_one, options=", ".join(options), value=show(value)))
    return str(value)


def parse_curve(value: Any) -> str:
    return _choice(value, [c.value for c in Curve], "must be one of %(options)s, not %(value)s")


def parse_anchors(value: Any) -> list[list[Any]]:
    _short_list(
        value,
        'must be a non-empty list of ["HH:MM", tokens] rows',
        MAX_ANCHORS,
        "has %(count)s rows; at most %(limit)s",
        empty=False,
    )
    rows: list[tuple[int, list[Any]]] = []
    problems: list[tuple[int, Message]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            problems.append(
                (
                    number,
                    Message(
                        'row %(number)s must be ["HH:MM", tokens], not %(value)s',
                        number=number,
                        value=show(row),
                    ),
                )
            )
            continue
        try:
            rows.append((number, [parse_time(row[0]), parse_positive_int(row[1])]))
        except Invalid as exc:
            problems.append((number, ROW_PROBLEM.at(number, exc)))
    if problems:
        # Every bad row at once, not the first of them per save.
        raise BadRows(problems, rows)
    return [row for _number, row in rows]


def parse_windows(value: Any) -> list[list[str]]:
    _short_list(
        value,
        'must be a list of ["HH:MM", "HH:MM"] pairs',
        MAX_WINDOWS,
        "has %(count)s windows; at most %(limit)s",
    )
    out: list[list[str]] = []
    for number, row in enumerate(value, start=1):
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise Invalid(
                Message(
                    'window %(number)s must be ["HH:MM", "HH:MM"], not %(value)s',
                    number=number,
                    value=show(row),
                )
            )
        try:
            out.append([parse_time(row[0]), parse_time(row[1])])
        except Invalid as exc:
            raise Invalid(
                Message("window %(number)s: %(problem)s", number=number, problem=message_of(exc))
            ) from None
    return out


def parse_weekdays(value: Any) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise Invalid(Message('must be an object like {"fri": {"curfew_start": "00:30"}}'))
    out: dict[str, dict[str, str]] = {}
    for day, times in value.items():
        if day not in WEEKDAYS:
            raise Invalid(
                Message(
                    "%(value)s is not a weekday; use %(options)s",
                    value=show(day),
                    options=", ".join(WEEKDAYS),
                )
            )
        if not isinstance(times, dict):
            raise Invalid(
                Message(
                    "%(day)s: must be an object of curfew_start / lights_out / wake_up", day=day
                )
            )
        unknown = sorted(set(times) - set(NIGHT_KEYS))
        if unknown:
            raise Invalid(
                Message(
                    "%(day)s: unknown key %(value)s; use %(options)s",
                    day=day,
                    value=show(unknown[0]),
                    options=", ".join(NIGHT_KEYS),
                )
            )
        try:
            parsed: dict[str, str] = {
                key: parse_time(times[key]) for key in NIGHT_KEYS if key in times
            }
        except Invalid as exc:
            raise Invalid(
                Message("%(day)s: %(problem)s", day=day, problem=message_of(exc))
            ) from None
        if parsed:
            out[day] = parsed
    return {day: out[day] for day in WEEKDAYS if day in out}


def parse_holiday_calendar(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise Invalid(
            Message(
                'must be a calendar code like "CN" or "US-CA", or null; not %(value)s',
                value=show(value),
            )
        )
    code = calendars.canonical(value)
    if code is None:
        raise Unprocessable(
            Message(
                "%(value)s is not a holiday calendar the holidays package knows", value=show(value)
            )
        )
    return code


def parse_dates(value: Any) -> list[str]:
    _short_list(
        value,
        'must be a list of "YYYY-MM-DD" dates',
        MAX_EXTRA_HOLIDAYS,
        "has %(count)s dates; at most %(limit)s",
    )
    out: set[str] = set()
    for item in value:
        try:
            # Not ``len == 10`` alone: Python also reads "2026-W40-2" as a date.
            if not isinstance(item, str) or not re.fullmatch(DATE_PATTERN, item):
                raise ValueError
            out.add(dt.date.fromisoformat(item).isoformat())
        except ValueError:
            raise Invalid(
                Message("%(value)s is not a date as YYYY-MM-DD", value=show(item))
            ) from None
    return sorted(out)


def parse_tier_texts(value: Any) -> list[str]:
    _short_list(
        value,
        "must be a non-empty list of texts",
        MAX_TIERS,
        "has %(count)s tiers; at most %(limit)s",
        empty=False,
    )
    parse = text_parser(allow_empty=False, limit=MAX_TIER_TEXT)
    out = []
    for number, item in enumerate(value, start=1):
        try:
            out.append(parse(item))
        except Invalid as exc:
            raise Invalid(
                Message("tier %(number)s %(problem)s", number=number, problem=message_of(exc))
            ) from None
    return out


def parse_reasoning_effort(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return _choice(value, REASONING_EFFORTS, "must be one of %(options)s or null, not %(value)s")


def parse_safety_max_tokens(value: Any) -> int | None:
    if value is None:
        return None
    return parse_positive_int(value, floor=MIN_SAFETY_MAX_TOKENS, nullable=True)


def parse_sessions(value: Any) -> list[str]:
    _short_list(
        value,
        "must be a list of session ids",
        MAX_EXEMPT_SESSIONS,
        "has %(count)s sessions; at most %(limit)s",
    )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_SESSION_ID:
            raise Invalid(
                Message(
                    "%(value)s is not a session id (1-%(limit)s characters of text)",
                    value=show(item),
                    limit=MAX_SESSION_ID,
                )
            )
        if item.strip() not in out:
            out.append(item.strip())
    return out


def parse_purposes(value: Any) -> list[str]:
    """Purpose names, lowercased, in the order given; a repeat (in any case)
    is folded into the first, as a repeated session id or date is."""
    _short_list(
        value,
        'must be a list of purpose names like "title"',
        MAX_EXEMPT_PURPOSES,
        "has %(count)s purposes; at most %(limit)s",
    )
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not 1 <= len(item) <= MAX_PURPOSE:
            raise Invalid(
                Message(
                    "%(value)s is not a purpose name (1-%(limit)s characters)",
                    value=show(item),
                    limit=MAX_PURPOSE,
                )
            )
        if not re.fullmatch(PURPOSE_PATTERN, item):
            raise Invalid(
                Message(
                    "%(value)s is not a purpose name: use letters a-z, digits and _ . -, "
                    "starting with a letter or digit",
                    value=show(item),
                )
            )
        # The engine's own key for a purpose name: stored and asked the same way.
        key = purpose_key(item)
        if key is not None and key not in out:
            out.append(key)
    return out
