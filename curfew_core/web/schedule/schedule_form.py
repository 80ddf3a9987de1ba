"""The settings page's forms, put together; never a validator.

``ScheduleForm`` holds the Django forms the page shows (``web.schedule.forms``): the
plain settings generated from the declaration, the anchor and peak-window
formsets, the per-weekday times. ``changes_from_form`` reads them into typed
``changes`` for the one validation layer (``config.apply_changes``), which the
save hands to ``schedule_update`` unchanged. For the live preview,
``candidate`` finds which anchor rows are wrong and the nearest valid config
to draw from; no rule lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import values as schedule_values
from curfew_core.schedules.config import ConfigError
from curfew_core.schedules.values import ROW_PROBLEM
from curfew_core.web import words
from curfew_core.web.schedule.forms import (
    AnchorFormSet,
    PeakWindowFormSet,
    ScheduleSettingsForm,
    SettingsForm,
    WeekdaysForm,
    rows_of,
    with_spare_row,
)


@dataclass
class ScheduleForm:
    """The page's forms: the plain settings, the two row tables (formsets)
    and the per-weekday times, bound when posted."""

    settings: SettingsForm
    anchors: Any  # AnchorFormSet
    peak_windows: Any  # PeakWindowFormSet
    weekdays: WeekdaysForm
    version: int
    errors: dict[str, str] = field(default_factory=dict)
    #: The settings this form saves (a section's keys); None: all of them.
    keys: frozenset[str] | None = None

    def flag(self, errors: dict[str, str]) -> None:
        """The validation layer's errors, kept for the page and put on the fields."""
        self.errors = errors
        self.settings.flag(errors)

    def with_spare_rows(self) -> ScheduleForm:
        self.anchors = with_spare_row(self.anchors)
        self.peak_windows = with_spare_row(self.peak_windows)
        return self

    def flag_rows(self, problems: Mapping[int, str]) -> None:
        for index, message in problems.items():
            self.anchors.forms[index].flag(message)


def form_from_config(config: Mapping[str, Any], version: int) -> ScheduleForm:
    return ScheduleForm(
        settings=ScheduleSettingsForm(initial=ScheduleSettingsForm.initial_from(config)),
        anchors=AnchorFormSet(
            initial=[{"time": at, "tokens": tokens} for at, tokens in config["anchors"]],
            prefix="anchors",
        ),
        peak_windows=PeakWindowFormSet(
            initial=[{"start": a, "end": b} for a, b in config["peak_windows"]], prefix="peak"
        ),
        weekdays=WeekdaysForm(initial=WeekdaysForm.initial_from(config)).with_placeholders(config),
        version=version,
    )


def _version(post: QueryDict) -> int:
    number = schedule_values.int_from_text(post.get("version", ""))
    return -1 if number is None else number


def form_from_post(post: QueryDict, keys: frozenset[str] | None = None) -> ScheduleForm:
    settings = ScheduleSettingsForm(post)
    return ScheduleForm(
        settings=settings,
        anchors=AnchorFormSet(post, prefix="anchors"),
        peak_windows=PeakWindowFormSet(post, prefix="peak"),
        weekdays=WeekdaysForm(post).with_placeholders(
            {key: post.get(key, "") for key in schedule_values.NIGHT_KEYS}
        ),
        version=_version(post),
        keys=keys,
    )


def _number(text: str) -> Any:
    """An integer if the text is one; otherwise the text itself, for the
    validation layer to reject with its own message."""
    number = schedule_values.int_from_text(text.strip().replace(",", "").replace("_", ""))
    return text if number is None else number


def anchor_rows(form: ScheduleForm) -> list[tuple[int, list[Any]]]:
    """The non-blank anchor rows as ``(row index in the form, [time, tokens])``."""
    return [(index, [at, _number(tokens)]) for index, (at, tokens) in rows_of(form.anchors)]


def changes_from_form(form: ScheduleForm) -> dict[str, Any]:
    """Every setting the form saves, typed, ready for ``apply_changes``."""
    changes = form.settings.changes()
    changes["anchors"] = [row for _, row in anchor_rows(form)]
    changes["peak_windows"] = [list(cells) for _, cells in rows_of(form.peak_windows)]
    changes["weekdays"] = form.weekdays.changes()
    if form.keys is not None:
        # A section's post holds only its own boxes: what is not in it is not
        # an edit (an absent checkbox is not "off").
        changes = {key: value for key, value in changes.items() if key in form.keys}
    return changes


def anchor_problems(
    saved: Mapping[str, Any], changes: Mapping[str, Any], form: ScheduleForm
) -> tuple[dict[int, str], list[list[Any]]]:
    """Which anchor rows are wrong, and the rows that are fine.

    Each row is put through the validation layer on top of the rows accepted
    before it (against the candidate night when that is valid), so a row is
    blamed for its own problem, a repeat is blamed on the second copy, and no
    rule is restated here.
    """
    others = {key: value for key, value in changes.items() if key != "anchors"}
    # The night as typed wherever it is valid, even when another field is
    # wrong: rows are blamed against the window the person sees.
    base, _ = nearest_valid(saved, others)
    problems: dict[int, str] = {}
    accepted: list[list[Any]] = []
    for index, row in anchor_rows(form):
        try:
            schedule_config.apply_changes(base, {"anchors": [*accepted, row]})
        except ConfigError as exc:
            message = exc.errors.get("anchors") or next(iter(exc.errors.values()))
            # The row's own problem, without the "row 3: " the API numbers it with.
            problems[index] = words.localized(ROW_PROBLEM.problem_of(message))
        else:
            accepted.append(row)
    return problems, accepted


@dataclass
class Candidate:
    """What the form would save, or the nearest valid config to draw from."""

    config: dict[str, Any]
    #: Field errors from the validation layer (empty: the form would save).
    errors: dict[str, str]
    #: Fields left out of ``config`` because they are invalid.
    left_out: list[str]
    row_problems: dict[int, str]


def nearest_valid(
    saved: Mapping[str, Any], changes: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The saved config with as many of ``changes`` as the layer accepts, and
    the fields left out. Each refusal drops the fields it names, so this ends
    within one try per field; a refusal naming none of them (the saved config
    itself is refused) falls back to the saved config."""
    attempt = dict(changes)
    left_out: list[str] = []
    while True:
        try:
            return schedule_config.apply_changes(saved, attempt), left_out
        except ConfigError as refused:
            named = [key for key in refused.errors if key in attempt]
            if not named:
                return schedule_config.with_defaults(saved), [*left_out, *attempt]
            for key in named:
                del attempt[key]
            left_out += named


def candidate(saved: Mapping[str, Any], form: ScheduleForm) -> Candidate:
    """Validate the whole form once; when it fails, keep every valid edit
    (and the valid anchor rows) so the preview can still be drawn honestly."""
    changes = changes_from_form(form)
    try:
        return Candidate(schedule_config.apply_changes(saved, changes), {}, [], {})
    except ConfigError as exc:
        errors = words.localized_errors(exc.errors)
    problems: dict[int, str] = {}
    accepted: list[list[Any]] = []
    if "anchors" in changes:
        problems, accepted = anchor_problems(saved, changes, form)
    attempt = dict(changes)
    if problems:
        attempt["anchors"] = accepted
    if not attempt.get("anchors"):
        attempt.pop("anchors", None)
    config, left_out = nearest_valid(saved, attempt)
    if problems or "anchors" in errors:
        left_out.append("anchors")
    return Candidate(config, errors, sorted(set(left_out)), problems)
