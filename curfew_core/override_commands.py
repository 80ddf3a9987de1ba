"""Parsing override requests, for the API and the management command alike."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from curfew_core.engine import OverrideError, parse_duration
from curfew_core.schedule_config import DATE_PATTERN, show, text_problem, whole_number

Verb = Literal["overtime", "off", "auto", "debug", "debug-clear"]


class Unprocessable(OverrideError):
    """Well-formed (the OpenAPI schema admits it) but refused: an overtime
    over 24 h, a date that does not exist, a moment out of range. The API
    answers 422, and 400 only for what the schema itself refuses."""


# -- shapes, declared once: ``re.fullmatch`` here, ``pattern`` in the OpenAPI
# document (ASCII classes only, so Python and ECMA-262 read them alike).
_DAY = DATE_PATTERN[1:-1]
_HHMM = "([01][0-9]|2[0-3]):[0-5][0-9]"
_OFFSET = "[+-]([01][0-9]|2[0-3]):[0-5][0-9]"
#: An RFC 3339 instant with its offset, as the verdict's ``at`` takes it.
INSTANT_PATTERN = f"^{_DAY}T{_HHMM}:[0-5][0-9](\\.[0-9]{{1,6}})?(Z|{_OFFSET})$"
#: What ``{"debug": ...}`` takes: ``clear``, ``HH:MM``, or a date and time
#: (``T`` or a space between, seconds and an offset optional).
DEBUG_PATTERN = f"^(clear|{_HHMM}|{_DAY}[T ]{_HHMM}(:[0-5][0-9](\\.[0-9]{{1,6}})?)?(Z|{_OFFSET})?)$"
#: What ``{"overtime": "..."}`` takes: minutes as a number, or h/m/s parts.
_N = "[0-9]{1,10}"
DURATION_PATTERN = f"^({_N}|{_N}h({_N}m)?({_N}s)?|{_N}m({_N}s)?|{_N}s)$"
#: Overtime as a JSON number is minutes, up to the 24 h an overtime may last.
MAX_OVERTIME_MINUTES = 24 * 60


# -- the override request, declared once: the OpenAPI document's
# ``OverrideRequest`` is these models' schemas (exactly one of them), and
# ``from_json`` takes exactly their verbs (``VERBS``), checked
# against the same patterns and bounds, with messages naming the verb.
class _OneVerb(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OvertimeRequest(_OneVerb):
    """Work on past the schedule for a while."""

    overtime: (
        Annotated[str, Field(pattern=DURATION_PATTERN)]
        | Annotated[int, Field(ge=1, le=MAX_OVERTIME_MINUTES)]
    ) = Field(
        description="30m, 2h, 1h30m, 90s or minutes; at most 24 h (else 422)",
        examples=["30m"],
    )


class OffRequest(_OneVerb):
    """Stop now, whatever the schedule says."""

    off: Literal[True]


class AutoRequest(_OneVerb):
    """Back to the schedule: end an overtime or a forced stop."""

    auto: Literal[True]


class DebugRequest(_OneVerb):
    """Set or clear the time machine."""

    debug: Annotated[str, Field(pattern=DEBUG_PATTERN)] = Field(
        description="HH:MM, YYYY-MM-DD HH:MM or clear; a date that does not "
        "exist or a moment outside 1900-8999 is refused with 422",
        examples=["01:30", "clear"],
    )


#: Each override a request may send, exactly one per request.
OVERRIDE_REQUESTS: tuple[type[BaseModel], ...] = (
    OvertimeRequest,
    OffRequest,
    AutoRequest,
    DebugRequest,
)
VERBS = tuple(name for model in OVERRIDE_REQUESTS for name in model.model_fields)


#: Moments a verdict may be asked about (``at``, the time machine). The engine
#: looks days around a moment; near the ends of ``datetime`` that overflows,
#: and a time machine stuck there would fail every verdict of its user.
EARLIEST_MOMENT = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_MOMENT = datetime(9000, 1, 1, tzinfo=UTC)


def check_moment(instant: datetime) -> datetime:
    """``instant`` if a verdict can be given for it, else ``Unprocessable``."""
    if not EARLIEST_MOMENT <= instant < LATEST_MOMENT:
        raise Unprocessable(
            f"{instant.isoformat()} is out of range; use a moment between the years "
            f"{EARLIEST_MOMENT.year} and {LATEST_MOMENT.year - 1}"
        )
    return instant


#: The longest argument an override takes ("2026-09-29T23:30:00.000000+08:00"
#: is 32). Longer is never a duration or a moment, and a long run of digits
#: would reach ``int`` (ValueError past 4300 digits) in the parsers.
MAX_ARGUMENT = 64


def _argument(verb: str, text: str) -> str:
    problem = text_problem(text)
    if problem:
        raise OverrideError(f"{verb}: the argument {problem}")
    if len(text) > MAX_ARGUMENT:
        raise OverrideError(
            f"{verb}: {show(text)} is {len(text)} characters long; at most {MAX_ARGUMENT}"
        )
    return text


@dataclass(frozen=True, slots=True)
class OverrideCommand:
    verb: Verb
    duration: timedelta | None = None
    moment: str | None = None


def from_words(words: list[str]) -> OverrideCommand:
    """Words as typed: ``overtime 30m``, ``off``, ``auto``, ``debug 01:30``, ``debug clear``."""
    if not words:
        raise OverrideError(f"name an override: {', '.join(VERBS)}")
    verb, args = words[0], words[1:]
    if text_problem(verb):
        raise OverrideError(f"{show(verb)} is not an override; use {', '.join(VERBS)}")
    if verb == "overtime":
        if len(args) != 1:
            raise OverrideError("overtime takes one duration, e.g. 30m, 2h, 90s")
        return OverrideCommand("overtime", duration=parse_duration(_argument(verb, args[0])))
    if verb in ("off", "auto"):
        if args:
            raise OverrideError(f"{verb} takes no argument")
        return OverrideCommand(verb)  # type: ignore[arg-type]
    if verb == "debug":
        moment = _argument(verb, " ".join(args).strip())
        if not moment:
            raise OverrideError("debug takes HH:MM, YYYY-MM-DD HH:MM or clear")
        if moment == "clear":
            return OverrideCommand("debug-clear")
        return OverrideCommand("debug", moment=moment)
    raise OverrideError(f"{show(verb)} is not an override; use {', '.join(VERBS)}")


def from_json(body: Mapping[str, Any]) -> OverrideCommand:
    """One key: ``{"overtime": "30m"}``, ``{"off": true}``, ``{"auto": true}``,
    ``{"debug": "01:30" | "clear"}``."""
    keys = [key for key in body]
    if len(keys) != 1:
        raise OverrideError(
            f"send exactly one of {', '.join(VERBS)}; got {', '.join(keys) or 'nothing'}"
        )
    verb = keys[0]
    value = body[verb]
    if verb == "overtime":
        minutes = whole_number(value)
        if minutes is not None:
            if not 1 <= minutes <= MAX_OVERTIME_MINUTES:
                raise OverrideError(
                    f"overtime in minutes must be 1 to {MAX_OVERTIME_MINUTES}, not {show(value)}"
                )
            value = str(minutes)
        if not isinstance(value, str) or not re.fullmatch(DURATION_PATTERN, value):
            raise OverrideError(
                f'overtime takes a duration like "30m", "2h", "1h30m", "90s" or a number of '
                f"minutes, not {show(value)}"
            )
        try:
            return from_words(["overtime", value])
        except OverrideError as exc:
            raise Unprocessable(str(exc)) from None
    if verb in ("off", "auto"):
        if value is not True:
            raise OverrideError(f"{verb} takes true")
        return from_words([verb])
    if verb == "debug":
        if not isinstance(value, str) or not re.fullmatch(DEBUG_PATTERN, value):
            raise OverrideError(
                f'debug takes "HH:MM", "YYYY-MM-DD HH:MM" or "clear", not {show(value)}'
            )
        return from_words(["debug", value])
    raise OverrideError(f"{show(verb)} is not an override; use {', '.join(VERBS)}")
