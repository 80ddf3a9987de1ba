"""The one validation layer for schedules.

The API, the settings form and the management commands all hand a mapping of
API-shaped values (snake_case keys, ``"HH:MM"`` strings, JSON types) to
``apply_changes``; it answers the complete canonical config or raises
``ConfigError`` naming every bad field, and it never half-applies. ``build``
turns a canonical config into the engine's ``Schedule``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from curfew_core.engine import Anchor, NightTimes, Schedule, format_wall, parse_wall
from curfew_core.engine.clock import MINUTES_PER_DAY, cyclic_span
from curfew_core.engine.curve import rises, stretch
from curfew_core.engine.schedule import (
    DEFAULT_PERSONA_EN,
    DEFAULT_PERSONA_ZH,
    DEFAULT_TIER_TEXTS_EN,
    DEFAULT_TIER_TEXTS_ZH,
)
from curfew_core.schedules.declaration import (
    Declaration,
    ScheduleSettings,
    defaults_of,
    parsers_of,
)
from curfew_core.schedules.messages import Message, message_of
from curfew_core.schedules.values import (
    NIGHT_KEYS,
    ROW_PROBLEM,
    BadRows,
    Invalid,
    Unprocessable,
    all_of,
    show,
    text_problem,
    value_problem,
)

Config = dict[str, Any]

PERSONA_PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "en": (DEFAULT_PERSONA_EN, DEFAULT_TIER_TEXTS_EN),
    "zh": (DEFAULT_PERSONA_ZH, DEFAULT_TIER_TEXTS_ZH),
}

#: The canonical default config, derived from the declaration.
DEFAULTS: Config = defaults_of(ScheduleSettings)
FIELDS = tuple(DEFAULTS)
#: The replies the seed plugin gave (the declared defaults): terse, and what an
#: imported seed config without its own replies keeps giving. New accounts get
#: informative ones instead (``services.schedules.informative_replies``).
REPLY_FIELDS = ("off_duty_reply", "lights_out_reply")
TERSE_REPLIES: dict[str, str] = {field: DEFAULTS[field] for field in REPLY_FIELDS}


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


def default_config(declaration: Declaration = ScheduleSettings) -> Config:
    return defaults_of(declaration)


def with_defaults(stored: Mapping[str, Any], declaration: Declaration = ScheduleSettings) -> Config:
    """A stored config with settings added since it was saved filled in."""
    config = default_config(declaration)
    config.update(copy.deepcopy({k: v for k, v in stored.items() if k in config}))
    return config


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


def _night_problem(start: int, lights: int, wake: int) -> Message | None:
    """The three times must come in order around the dial within one day."""
    if cyclic_span(start, lights) + cyclic_span(lights, wake) > MINUTES_PER_DAY:
        return Message(
            "gets sleepy at %(start)s, asleep at %(lights)s and wakes at %(wake)s overlap: "
            "the night would last over 24 hours",
            start=format_wall(start),
            lights=format_wall(lights),
            wake=format_wall(wake),
        )
    return None


def _check_whole(
    config: Config,
    errors: dict[str, str],
    changed: Iterable[str],
    bad_rows: BadRows | None = None,
) -> None:
    """The rules between settings, on every value that parsed. ``bad_rows``:
    the anchors had rows that did not read; the ones that did are still
    checked, and their problems join the others in row order."""
    changed = list(changed)
    if "extra_holidays" not in errors and "extra_workdays" not in errors:
        both = sorted(set(config["extra_holidays"]) & set(config["extra_workdays"]))
        if both:
            # Name the list this change touched; the other was already saved.
            only_holidays = "extra_holidays" in changed and "extra_workdays" not in changed
            key = "extra_holidays" if only_holidays else "extra_workdays"
            errors[key] = Message(
                "%(dates)s cannot be both one of your holidays and one of your workdays; "
                "keep it in one list",
                dates=", ".join(both),
            )
    if not any(key in errors for key in NIGHT_KEYS):
        problem = _night_problem(*_night(config))
        if problem:
            # Name the time(s) this change moved; the others were already fine.
            for key in [key for key in NIGHT_KEYS if key in changed] or ["lights_out"]:
                errors[key] = problem
    if "weekdays" not in errors and not any(key in errors for key in NIGHT_KEYS):
        day_problems = [
            Message("%(day)s: %(problem)s", day=day, problem=problem)
            for day in config["weekdays"]
            if (problem := _night_problem(*_night(config, day)))
        ]
        if day_problems:
            errors["weekdays"] = all_of(day_problems)
    if any(key in errors for key in NIGHT_KEYS):
        return
    if "anchors" in errors and bad_rows is None:
        return
    rows = bad_rows.readable if bad_rows is not None else list(enumerate(config["anchors"], 1))
    start, lights, _ = _night(config)
    window = cyclic_span(start, lights)
    offsets: list[int] = []
    problems: list[tuple[int, Message]] = list(bad_rows.problems) if bad_rows else []
    for number, (time_text, _tokens) in rows:
        at = parse_wall(time_text)
        offset = cyclic_span(start, at)
        if window and offset > window:
            problems.append(
                (
                    number,
                    ROW_PROBLEM.of(
                        number,
                        Message(
                            "%(time)s is outside the wind-down %(start)s–%(end)s",
                            time=time_text,
                            start=format_wall(start),
                            end=format_wall(lights),
                        ),
                    ),
                )
            )
        elif offset in offsets:
            problems.append(
                (number, ROW_PROBLEM.of(number, Message("%(time)s appears twice", time=time_text)))
            )
        offsets.append(offset)
    if problems:
        # Every bad row at once: a person fixes them in one go, not one per save.
        problems.sort(key=lambda numbered: numbered[0])
        errors["anchors"] = all_of([problem for _number, problem in problems])
        return
    # Canonical order: by time through the window (23:00 before 00:00).
    config["anchors"] = [
        row for _, row in sorted(zip(offsets, config["anchors"], strict=True), key=lambda p: p[0])
    ]


def _window(config: Mapping[str, Any]) -> NightTimes:
    start, lights = parse_wall(config["curfew_start"]), parse_wall(config["lights_out"])
    return NightTimes(start, lights, parse_wall(config["wake_up"]))


def _stretched(before: Config, config: Config) -> list[list[Any]]:
    """``before``'s anchors moved onto ``config``'s window (``curve.stretch``)."""
    anchors = [Anchor(parse_wall(at), tokens) for at, tokens in before["anchors"]]
    moved = stretch(anchors, _window(before), _window(config))
    return [[format_wall(anchor.at), anchor.tokens] for anchor in moved]


def _follows_the_night(before: Config, config: Config, errors: Mapping[str, str]) -> bool:
    """True when the window moved and the curve was left as it was: then the
    curve is the shape the person chose, and it moves with the night. Anchors
    sent changed are placed by hand and checked against the new window."""
    if errors.keys() & {"curfew_start", "lights_out", "anchors"}:
        return False
    moved = any(config[key] != before[key] for key in ("curfew_start", "lights_out"))
    return moved and config["anchors"] == before["anchors"]


def rising_parts(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a (valid) config's curve gets longer toward lights-out, as
    ``(from, to)`` clock times: allowed, but the page says so."""
    anchors = [Anchor(parse_wall(at), tokens) for at, tokens in config["anchors"]]
    return [(format_wall(a.at), format_wall(b.at)) for a, b in rises(anchors)]


def apply_changes(
    current: Mapping[str, Any],
    changes: Mapping[str, Any],
    declaration: Declaration = ScheduleSettings,
) -> Config:
    """Validate ``changes`` on top of ``current``; the full new config or ``ConfigError``.

    Unknown keys are errors (a typo must not be silently dropped). Nothing is
    half-applied: the caller saves the result or nothing.
    """
    if not isinstance(changes, Mapping):
        raise ConfigError({"body": Message("must be a JSON object of settings")})
    parsers = parsers_of(declaration)
    config = with_defaults(current, declaration)
    before = with_defaults(current, declaration)
    errors: dict[str, str] = {}
    unprocessable: set[str] = set()
    bad_rows: BadRows | None = None
    for key, value in changes.items():
        parser = parsers.get(key)
        if parser is None:
            errors[key if text_problem(key) is None else show(key)] = Message("is not a setting")
            continue
        problem = value_problem(value)
        if problem:
            errors[key] = problem
            continue
        try:
            config[key] = parser(value)
        except Unprocessable as exc:
            errors[key] = message_of(exc)
            unprocessable.add(key)
        except Invalid as exc:
            errors[key] = message_of(exc)
            if key == "anchors" and isinstance(exc, BadRows):
                bad_rows = exc
    changed = [key for key in changes if key in config and config[key] != before[key]]
    if _follows_the_night(before, config, errors):
        config["anchors"] = _stretched(before, config)
    # The rules between settings run on every value that parsed, also when
    # another one did not: a save's problems all come back at once.
    parsed_wrong = set(errors)
    _check_whole(config, errors, changed, bad_rows)
    unprocessable.update(set(errors) - parsed_wrong)
    if errors:
        raise ConfigError(errors, unprocessable)
    return config


# -- into the engine ----------------------------------------------------------


def build(config: Mapping[str, Any]) -> Schedule:
    """The engine's ``Schedule`` for a canonical (already validated) config.

    Not validated again (``model_construct``): the config passed
    ``apply_changes`` when it was saved, and a stored row must never fail
    the verdict path."""
    return ScheduleSettings.model_construct(**config).schedule()
