"""Parsing override requests, for the API and the management command alike."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from curfew_core.engine import OverrideError, parse_debug_moment, parse_duration
from curfew_core.schedules.messages import Message, message_of
from curfew_core.schedules.values import DATE_PATTERN, show, text_problem, whole_number

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
#: "Pretend it is ..." (the ``debug`` override) ends by itself: after an hour
#: unless told otherwise, after a day at the most.
DEFAULT_PRETEND = timedelta(hours=1)
MIN_PRETEND = timedelta(minutes=1)
MAX_PRETEND = timedelta(hours=24)
MAX_PRETEND_MINUTES = 24 * 60


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
    """Pretend it is another moment (gateways are told so) for a while, or stop."""

    debug: Annotated[str, Field(pattern=DEBUG_PATTERN)] = Field(
        description="HH:MM, YYYY-MM-DD HH:MM or clear; a date that does not "
        "exist or a moment outside 1900-8999 is refused with 422",
        examples=["01:30", "clear"],
    )
    duration: (
        Annotated[str, Field(pattern=DURATION_PATTERN)]
        | Annotated[int, Field(ge=1, le=MAX_PRETEND_MINUTES)]
    ) = Field(
        default="1h",
        description="how long to pretend: 15m, 1h, 4h, 24h or minutes; 1 minute to 24 h "
        "(else 422); 1 h when left out. Then it is as if cleared.",
        examples=["1h"],
    )


#: Each override a request may send, exactly one per request.
OVERRIDE_REQUESTS: tuple[type[BaseModel], ...] = (
    OvertimeRequest,
    OffRequest,
    AutoRequest,
    DebugRequest,
)
#: The verbs: each request's required field (``duration`` goes with ``debug``).
VERBS = tuple(
    name
    for model in OVERRIDE_REQUESTS
    for name, field in model.model_fields.items()
    if field.is_required()
)


#: Moments a verdict may be asked about (``at``, the time machine). The engine
#: looks days around a moment; near the ends of ``datetime`` that overflows,
#: and a time machine stuck there would fail every verdict of its user.
EARLIEST_MOMENT = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_MOMENT = datetime(9000, 1, 1, tzinfo=UTC)


def check_moment(instant: datetime) -> datetime:
    """``instant`` if a verdict can be given for it, else ``Unprocessable``."""
    if not EARLIEST_MOMENT <= instant < LATEST_MOMENT:
        raise Unprocessable(
            Message(
                "%(moment)s is out of range; use a moment between the years %(first)s and %(last)s",
                moment=instant.isoformat(),
                first=EARLIEST_MOMENT.year,
                last=LATEST_MOMENT.year - 1,
            )
        )
    return instant


def localizable(exc: OverrideError) -> OverrideError:
    """``exc`` with its message as a ``Message`` (the page says it in the
    reader's language, the API keeps the English): the engine's errors carry
    their template and parameters, but the engine cannot import ``Message``."""
    if isinstance(exc.args[0] if exc.args else None, Message):
        return exc
    again = type(exc)(Message(exc.template, **exc.params))
    again.field = exc.field
    return again


def debug_moment(text: str, *, now: datetime, tz: tzinfo) -> datetime:
    """The moment ``debug`` names, as of the real ``now`` in ``tz``; checked."""
    try:
        return check_moment(parse_debug_moment(text, now=now, tz=tz))
    except OverrideError as exc:
        raise localizable(exc) from None


#: The longest argument an override takes ("2026-09-29T23:30:00.000000+08:00
#: is 32, and "for 24h" after it). Longer is never a duration or a moment, and
#: a long run of digits would reach ``int`` (ValueError past 4300 digits).
MAX_ARGUMENT = 64


def _argument(verb: str, text: str) -> str:
    problem = text_problem(text)
    if problem:
        raise OverrideError(
            Message("%(verb)s: the argument %(problem)s", verb=verb, problem=problem)
        )
    if len(text) > MAX_ARGUMENT:
        raise OverrideError(
            Message(
                "%(verb)s: %(text)s is %(length)s characters long; at most %(most)s",
                verb=verb,
                text=show(text),
                length=len(text),
                most=MAX_ARGUMENT,
            )
        )
    return text


def _not_an_override(verb: Any) -> OverrideError:
    return OverrideError(
        Message(
            "%(text)s is not an override; use %(verbs)s", text=show(verb), verbs=", ".join(VERBS)
        )
    )


def pretend_length(text: str) -> timedelta:
    """How long a pretend lasts: ``15m``, ``1h``, ``4h``, ``24h``, minutes as a
    bare number; from a minute to a day."""
    problem = Message(
        "%(text)s is not a length to pretend for; use e.g. 15m, 1h, 4h or 24h "
        "(from 1 minute to 24 hours)",
        text=show(text),
    )
    try:
        length = parse_duration(text)
    except OverrideError:
        raise _on("duration", OverrideError(problem)) from None
    if not MIN_PRETEND <= length <= MAX_PRETEND:
        raise _on("duration", OverrideError(problem))
    return length


def _on(field: str, exc: OverrideError) -> OverrideError:
    exc.field = field
    return exc


@dataclass(frozen=True, slots=True)
class OverrideCommand:
    verb: Verb
    #: Overtime's length, or how long a ``debug`` pretend lasts.
    duration: timedelta | None = None
    moment: str | None = None


def from_words(words: list[str]) -> OverrideCommand:
    """Words as typed: ``overtime 30m``, ``off``, ``auto``, ``debug 01:30``,
    ``debug 2026-11-30 23:30 for 4h`` (1 h when ``for`` is left out), ``debug clear``."""
    if not words:
        raise OverrideError(Message("name an override: %(verbs)s", verbs=", ".join(VERBS)))
    verb, args = words[0], words[1:]
    if text_problem(verb):
        raise _not_an_override(verb)
    if verb == "overtime":
        if len(args) != 1:
            raise OverrideError(Message("overtime takes one duration, e.g. 30m, 2h, 90s"))
        try:
            return OverrideCommand("overtime", duration=parse_duration(_argument(verb, args[0])))
        except OverrideError as exc:
            raise localizable(exc) from None
    if verb in ("off", "auto"):
        if args:
            raise OverrideError(Message("%(verb)s takes no argument", verb=verb))
        return OverrideCommand(verb)  # type: ignore[arg-type]
    if verb == "debug":
        parts = _argument(verb, " ".join(args).strip()).split()
        length: list[str] = []
        if "for" in parts:
            cut = len(parts) - 1 - parts[::-1].index("for")
            parts, length = parts[:cut], parts[cut + 1 :]
            if len(length) != 1:
                raise _on(
                    "duration",
                    OverrideError(
                        Message("debug takes one length after “for”, e.g. debug 23:30 for 1h")
                    ),
                )
        moment = " ".join(parts)
        if not moment:
            raise OverrideError(Message("debug takes HH:MM, YYYY-MM-DD HH:MM or clear"))
        if moment == "clear":
            if length:
                raise _on(
                    "duration",
                    OverrideError(Message("debug clear takes no length: it stops pretending now")),
                )
            return OverrideCommand("debug-clear")
        duration = pretend_length(length[0]) if length else DEFAULT_PRETEND
        return OverrideCommand("debug", duration=duration, moment=moment)
    raise _not_an_override(verb)


def words_from_form(form: Mapping[str, Any]) -> list[str]:
    """A page's override form as words for ``from_words``: ``verb`` plus
    ``duration`` (overtime's, or how long to pretend) or ``custom_duration``,
    and ``moment`` (a ``datetime-local`` value) for ``debug``."""
    verb = str(form.get("verb", ""))
    if verb == "overtime":
        duration = str(form.get("duration") or form.get("custom_duration") or "").strip()
        return ["overtime", duration] if duration else ["overtime"]
    if verb == "debug":
        moment = str(form.get("moment", "")).strip().replace("T", " ")
        words = ["debug", moment] if moment else ["debug"]
        length = str(form.get("duration") or "").strip()
        return [*words, "for", length] if length else words
    if verb == "debug-clear":
        return ["debug", "clear"]
    return [verb] if verb else []


def _json_length(value: Any) -> str:
    """``duration`` as the API takes it: minutes as a number, or text like ``1h``."""
    minutes = whole_number(value)
    if minutes is not None:
        if not 1 <= minutes <= MAX_PRETEND_MINUTES:
            raise _on(
                "duration",
                OverrideError(
                    Message(
                        "duration in minutes must be 1 to %(most)s, not %(value)s",
                        most=MAX_PRETEND_MINUTES,
                        value=show(value),
                    )
                ),
            )
        return str(minutes)
    if not isinstance(value, str) or not re.fullmatch(DURATION_PATTERN, value):
        raise _on(
            "duration",
            OverrideError(
                Message(
                    'duration takes a length like "15m", "1h", "4h", "24h" or a number of '
                    "minutes, not %(value)s",
                    value=show(value),
                )
            ),
        )
    return value


def from_json(body: Mapping[str, Any]) -> OverrideCommand:
    """One verb: ``{"overtime": "30m"}``, ``{"off": true}``, ``{"auto": true}``,
    ``{"debug": "01:30" | "clear"}``; ``debug`` may add ``"duration": "4h"``."""
    verb = _json_verb(body)
    value = body[verb]
    if verb == "overtime":
        return _json_overtime(value)
    if verb in ("off", "auto"):
        if value is not True:
            raise OverrideError(Message("%(verb)s takes true", verb=verb))
        return from_words([verb])
    if verb == "debug":
        return _json_debug(value, body)
    raise _not_an_override(verb)


def _json_verb(body: Mapping[str, Any]) -> str:
    """The one verb the body sends (``duration`` rides along with ``debug``
    only, and is not a verb)."""
    keys = [key for key in body]
    if "duration" in keys and "debug" not in keys:
        raise _on("duration", OverrideError(Message("duration goes with debug only")))
    verbs = [key for key in keys if key != "duration"] if "debug" in keys else keys
    if len(verbs) != 1:
        raise OverrideError(
            Message(
                "send exactly one of %(verbs)s; got %(got)s",
                verbs=", ".join(VERBS),
                got=", ".join(keys) or Message("nothing"),
            )
        )
    return verbs[0]


def _json_overtime(value: Any) -> OverrideCommand:
    """``overtime`` takes minutes as a number (1 to ``MAX_OVERTIME_MINUTES``) or
    a duration text like ``30m``; one well-formed but out of range is a 422."""
    minutes = whole_number(value)
    if minutes is not None:
        if not 1 <= minutes <= MAX_OVERTIME_MINUTES:
            raise OverrideError(
                Message(
                    "overtime in minutes must be 1 to %(most)s, not %(value)s",
                    most=MAX_OVERTIME_MINUTES,
                    value=show(value),
                )
            )
        value = str(minutes)
    if not isinstance(value, str) or not re.fullmatch(DURATION_PATTERN, value):
        raise OverrideError(
            Message(
                'overtime takes a duration like "30m", "2h", "1h30m", "90s" or a number of '
                "minutes, not %(value)s",
                value=show(value),
            )
        )
    try:
        return from_words(["overtime", value])
    except OverrideError as exc:
        raise Unprocessable(message_of(exc)) from None


def _json_debug(value: Any, body: Mapping[str, Any]) -> OverrideCommand:
    """``debug`` takes a moment (``HH:MM`` or ``YYYY-MM-DD HH:MM``) or ``clear``,
    with an optional ``duration``; one well-formed but refused is a 422."""
    if not isinstance(value, str) or not re.fullmatch(DEBUG_PATTERN, value):
        raise OverrideError(
            Message(
                'debug takes "HH:MM", "YYYY-MM-DD HH:MM" or "clear", not %(value)s',
                value=show(value),
            )
        )
    words = ["debug", value]
    if "duration" in body:
        words += ["for", _json_length(body["duration"])]
    try:
        return from_words(words)
    except OverrideError as exc:
        # Well-formed (the schema admits it): "clear" with a length, "0m", "25h".
        raise _on(exc.field or "debug", Unprocessable(message_of(exc))) from None
