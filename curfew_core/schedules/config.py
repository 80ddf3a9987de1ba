"""The one validation layer for schedules.

The API, the settings form and the management commands all hand a mapping of
API-shaped values (snake_case keys, ``"HH:MM"`` strings, JSON types) to
``apply_changes``; it answers the complete canonical config or raises
``ConfigError`` naming every bad field, and it never half-applies. ``build``
turns a canonical config into the engine's ``Schedule``.
"""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from curfew_core.engine import Anchor, NightTimes, Schedule, format_wall, parse_wall
from curfew_core.engine.clock import MINUTES_PER_DAY, cyclic_span
from curfew_core.engine.curve import place, rises
from curfew_core.engine.schedule import (
    DEFAULT_PERSONA_EN,
    DEFAULT_PERSONA_ZH,
    DEFAULT_TIER_TEXTS_EN,
    DEFAULT_TIER_TEXTS_ZH,
    anchor_positions,
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


#: The stored config's one key that is not a setting: where each anchor sits
#: through the wind-down, exactly (``"0"``, ``"3/8"``, ``"1"``: 0 at curfew
#: start, 1 at lights-out). The curve belongs to the night: these are its
#: truth, and ``anchors`` (the setting people read and write, ``"HH:MM"``
#: rows) only shows them on the default night (``curve.place``). Moving the
#: night moves the clock times, never the places, so moving it back lands on
#: the same minutes, and a night without wind-down keeps the shape. Doors show
#: settings only (``shown``); ``with_defaults`` and ``apply_changes``
#: keep it, and ``build`` gives it to the engine.
POSITIONS = "anchor_positions"


def with_defaults(stored: Mapping[str, Any], declaration: Declaration = ScheduleSettings) -> Config:
    """A stored config with settings added since it was saved filled in, and
    its curve's places (``POSITIONS``: kept, or read from the anchors)."""
    config = default_config(declaration)
    config.update(copy.deepcopy({k: v for k, v in stored.items() if k in config}))
    if "anchors" in config:
        kept = {**config, POSITIONS: stored.get(POSITIONS)}
        config[POSITIONS] = stored_positions(positions_of(kept))
    return config


def shown(config: Mapping[str, Any]) -> Config:
    """A config (or a body built on one) as every door shows it: the settings
    and whatever the door adds, without the curve's places (``POSITIONS``),
    which ``anchors`` show as clock times."""
    return {key: value for key, value in config.items() if key != POSITIONS}


# -- the curve's places ----------------------------------------------------------


def stored_positions(positions: Iterable[Fraction]) -> list[str]:
    return [str(position) for position in positions]


def _read_positions(value: Any, count: int) -> tuple[Fraction, ...] | None:
    """Stored places, if they are ``count`` rationals 0..1, each after the one
    before (as ``apply_changes`` keeps them); else None."""
    if not isinstance(value, list) or len(value) != count:
        return None
    try:
        places = tuple(Fraction(item) for item in value if isinstance(item, str))
    except (ValueError, ZeroDivisionError):
        return None
    if len(places) != count or any(not 0 <= p <= 1 for p in places):
        return None
    if any(b <= a for a, b in itertools.pairwise(places)):
        return None
    return places


def positions_of(config: Mapping[str, Any]) -> tuple[Fraction, ...]:
    """The curve's places in ``config``: the stored ones while they still show
    as its anchors on its default night; otherwise (a row from before places
    were kept, or anchors changed by something other than ``apply_changes``)
    read from the anchors' clock times on that night (``anchor_positions``)."""
    try:
        anchors = [Anchor(parse_wall(at), tokens) for at, tokens in config["anchors"]]
        night = _window(config)
    except (KeyError, TypeError, ValueError):
        return ()
    stored = _read_positions(config.get(POSITIONS), len(anchors))
    if stored is not None:
        times = place(stored, night)
        if times is None or list(times) == [a.at for a in anchors]:
            return stored
    return anchor_positions(anchors, night)


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
    before: Config | None = None,
) -> None:
    """The rules between settings, on every value that parsed. ``bad_rows``:
    the anchors had rows that did not read; the ones that did are still
    checked, and their problems join the others in row order. ``before``:
    the config changed (its curve's places are kept where the anchors were
    not written by hand; see ``POSITIONS``)."""
    changed = list(changed)
    _check_day_lists(config, errors, changed)
    _check_night(config, errors, changed)
    _check_weekday_nights(config, errors)
    if any(key in errors for key in NIGHT_KEYS):
        return  # the curve lies on the night: without one, it cannot be placed
    if "anchors" in errors and bad_rows is None:
        return
    _check_anchors(config, errors, bad_rows, before if before is not None else config)


def _check_day_lists(config: Config, errors: dict[str, str], changed: list[str]) -> None:
    """A date is one of your holidays or one of your workdays, never both."""
    if "extra_holidays" in errors or "extra_workdays" in errors:
        return
    both = sorted(set(config["extra_holidays"]) & set(config["extra_workdays"]))
    if not both:
        return
    # Name the list this change touched; the other was already saved.
    only_holidays = "extra_holidays" in changed and "extra_workdays" not in changed
    key = "extra_holidays" if only_holidays else "extra_workdays"
    errors[key] = Message(
        "%(dates)s cannot be both one of your holidays and one of your workdays; "
        "keep it in one list",
        dates=", ".join(both),
    )


def _check_night(config: Config, errors: dict[str, str], changed: list[str]) -> None:
    """The night's three times come in order within one day (``_night_problem``)."""
    if any(key in errors for key in NIGHT_KEYS):
        return
    problem = _night_problem(*_night(config))
    if problem:
        # Name the time(s) this change moved; the others were already fine.
        for key in [key for key in NIGHT_KEYS if key in changed] or ["lights_out"]:
            errors[key] = problem


def _check_weekday_nights(config: Config, errors: dict[str, str]) -> None:
    """Each weekday's own night, read over the usual one, holds the same rule."""
    if "weekdays" in errors or any(key in errors for key in NIGHT_KEYS):
        return
    day_problems = [
        Message("%(day)s: %(problem)s", day=day, problem=problem)
        for day in config["weekdays"]
        if (problem := _night_problem(*_night(config, day)))
    ]
    if day_problems:
        errors["weekdays"] = all_of(day_problems)


def _check_anchors(
    config: Config, errors: dict[str, str], bad_rows: BadRows | None, before: Config
) -> None:
    """The curve on a good night: anchors left as they were keep their shape
    (``_keep_curve``); rows written by hand lie in the wind-down, once each
    (``_place_rows``), and are stored in canonical order with their places."""
    moved = any(config[key] != before[key] for key in ("curfew_start", "lights_out"))
    if bad_rows is None and config["anchors"] == before["anchors"]:
        _keep_curve(config, before, moved)
        return
    rows = bad_rows.readable if bad_rows is not None else list(enumerate(config["anchors"], 1))
    offsets, problems = _place_rows(config, rows, before, moved)
    if bad_rows is not None:
        problems = [*bad_rows.problems, *problems]
    if problems:
        # Every bad row at once: a person fixes them in one go, not one per save.
        problems.sort(key=lambda numbered: numbered[0])
        errors["anchors"] = all_of([problem for _number, problem in problems])
        return
    # Canonical order: by time through the window (23:00 before 00:00).
    config["anchors"] = [
        row for _, row in sorted(zip(offsets, config["anchors"], strict=True), key=lambda p: p[0])
    ]
    config[POSITIONS] = stored_positions(_hand_positions(before, config, moved))


def _keep_curve(config: Config, before: Config, moved: bool) -> None:
    """The curve left as it was keeps its shape, which moves with the night."""
    positions = positions_of(before)
    if moved:
        config["anchors"] = _placed_anchors(positions, before, config)
    config[POSITIONS] = stored_positions(positions)


def _place_rows(
    config: Config, rows: list[tuple[int, list[Any]]], before: Config, moved: bool
) -> tuple[list[int], list[tuple[int, Message]]]:
    """Each row's offset (minutes from where the curve begins), and the rows'
    problems by row number: a row outside the wind-down, or one at a minute
    another row already holds."""
    start, lights, _ = _night(config)
    window = cyclic_span(start, lights)
    # Without a wind-down, rows are in order from where the curve last began
    # (its first anchor as shown), not from curfew start: that would put a
    # row at lights-out first and turn the curve upside down.
    origin = start if window else parse_wall(before["anchors"][0][0])
    offsets: list[int] = []
    # Rows still at a minute the curve showed on this same night keep their
    # places (``_hand_positions``): two anchors a short night shows on one
    # minute are two places, not a row written twice.
    spare = Counter(at for at, _ in before["anchors"]) if window and not moved else Counter()
    by_hand: set[int] = set()
    problems: list[tuple[int, Message]] = []
    for number, (time_text, _tokens) in rows:
        offset = cyclic_span(origin, parse_wall(time_text))
        kept = spare[time_text] > 0
        spare[time_text] -= 1
        if window and offset > window:
            problem = Message(
                "%(time)s is outside the wind-down %(start)s–%(end)s",
                time=time_text,
                start=format_wall(start),
                end=format_wall(lights),
            )
            problems.append((number, ROW_PROBLEM.of(number, problem)))
        elif offset in by_hand or (offset in offsets and not kept):
            problem = Message("%(time)s appears twice", time=time_text)
            problems.append((number, ROW_PROBLEM.of(number, problem)))
        offsets.append(offset)
        if not kept:
            by_hand.add(offset)
    return offsets, problems


def _window(config: Mapping[str, Any]) -> NightTimes:
    start, lights = parse_wall(config["curfew_start"]), parse_wall(config["lights_out"])
    return NightTimes(start, lights, parse_wall(config["wake_up"]))


def _placed_anchors(
    positions: tuple[Fraction, ...], before: Config, config: Config
) -> list[list[Any]]:
    """``before``'s anchors shown at ``positions`` on ``config``'s night; on a
    night without wind-down they keep the clock times they last showed."""
    times = place(positions, _window(config))
    if times is None:
        return copy.deepcopy(before["anchors"])
    return [
        [format_wall(at), tokens] for at, (_, tokens) in zip(times, before["anchors"], strict=True)
    ]


def _hand_positions(before: Config, config: Config, moved: bool) -> tuple[Fraction, ...]:
    """Places for anchors written by hand (valid, in canonical order): on an
    unmoved night, a row still at a minute an anchor showed keeps that
    anchor's exact place (changing one row leaves the rest of the shape to
    the minute); any other row's place is its minute through the wind-down."""
    night = _window(config)
    rows = [Anchor(parse_wall(at), tokens) for at, tokens in config["anchors"]]
    if night.winding_minutes == 0:
        # No wind-down: the rows' times are the curve's last clock times; the
        # same times (new tokens only) keep the exact places.
        if [at for at, _ in config["anchors"]] == [at for at, _ in before["anchors"]]:
            return positions_of(before)
        return anchor_positions(rows, night)
    spare: dict[str, list[Fraction]] = {}
    if not moved:
        for (at, _), position in zip(before["anchors"], positions_of(before), strict=True):
            spare.setdefault(at, []).append(position)
    out: list[Fraction] = []
    for (at, _), row in zip(config["anchors"], rows, strict=True):
        kept = spare.get(at)
        if kept:
            out.append(kept.pop(0))
        else:
            out.append(Fraction(cyclic_span(night.curfew_start, row.at), night.winding_minutes))
    return tuple(out)


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
    # The rules between settings run on every value that parsed, also when
    # another one did not: a save's problems all come back at once.
    parsed_wrong = set(errors)
    _check_whole(config, errors, changed, bad_rows, before)
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
    settings = ScheduleSettings.model_construct(**shown(config))
    schedule = settings.schedule()
    positions = positions_of(config)
    if positions == anchor_positions(schedule.anchors, schedule.night):
        # The anchors say the very places: one schedule, one way to write it.
        return schedule
    return settings.schedule(positions)
