"""The schedule form as an adapter, never a validator.

It turns widget values (strings, checkboxes, repeated rows, textareas of one
item a line) into the API-shaped ``changes`` that ``curfew_core.config``
validates, and turns a canonical config back into widget values. Text that
does not parse as a number is handed on as typed, so the one validation layer
names the problem in its own words; no rule lives here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from curfew_core import config as schedule_config
from curfew_core.config import NIGHT_KEYS, WEEKDAYS, ConfigError
from curfew_core.schema.settings import widget_kinds
from curfew_core.web.forms import ScheduleSettingsForm, SettingsForm

#: Each setting's widget follows from its declared type (``widget_kinds``):
#: a checkbox for a bool, a text box for a text or a choice that cannot be
#: empty, a textarea of one item a line for a list of texts. The rest
#: (anchors, peak windows, weekdays, the optional ones) have their own widgets.
BOOLEAN_FIELDS, TEXT_FIELDS, LINE_FIELDS = (
    tuple(key for key, kind in widget_kinds().items() if kind == wanted)
    for wanted in ("checkbox", "text", "lines")
)
#: Blank rows kept at the end of a repeatable table, so adding works without script.
SPARE_ROWS = 1
_ROW_PREFIX = re.compile(r"^row \d+: ")


@dataclass
class Row:
    """One editable row as typed, with the problem the validation layer found."""

    first: str = ""
    second: str = ""
    error: str = ""

    @property
    def blank(self) -> bool:
        return not self.first.strip() and not self.second.strip()


@dataclass
class ScheduleForm:
    """Widget values for rendering and re-rendering, exactly as typed."""

    values: dict[str, Any]
    anchors: list[Row]
    peak_windows: list[Row]
    weekdays: dict[str, dict[str, str]]
    version: int
    #: The plain settings as a Django form generated from the declaration
    #: (bound when posted); ``values`` mirrors it for the hand-made widgets.
    settings: SettingsForm
    errors: dict[str, str] = field(default_factory=dict)

    def flag(self, errors: dict[str, str]) -> None:
        """The validation layer's errors, kept for the page and put on the fields."""
        self.errors = errors
        self.settings.flag(errors)

    def with_spare_rows(self) -> ScheduleForm:
        for rows in (self.anchors, self.peak_windows):
            while sum(1 for row in rows[-SPARE_ROWS:] if row.blank) < SPARE_ROWS or not rows:
                rows.append(Row())
        return self


def _lines(items: list[str]) -> str:
    return "\n".join(items)


def form_from_config(config: Mapping[str, Any], version: int) -> ScheduleForm:
    values: dict[str, Any] = {key: config[key] for key in BOOLEAN_FIELDS + TEXT_FIELDS}
    values["holiday_calendar"] = config["holiday_calendar"] or ""
    values["winding_reasoning_effort"] = config["winding_reasoning_effort"] or ""
    safety = config["safety_max_tokens"]
    values["safety_max_tokens"] = "" if safety is None else str(safety)
    for key in LINE_FIELDS:
        values[key] = _lines([str(item) for item in config[key]])
    return ScheduleForm(
        values=values,
        anchors=[Row(at, str(tokens)) for at, tokens in config["anchors"]],
        peak_windows=[Row(start, end) for start, end in config["peak_windows"]],
        weekdays={
            day: {key: config["weekdays"].get(day, {}).get(key, "") for key in NIGHT_KEYS}
            for day in WEEKDAYS
        },
        version=version,
        settings=ScheduleSettingsForm(initial=ScheduleSettingsForm.initial_from(config)),
    )


def _rows(post: QueryDict, first: str, second: str) -> list[Row]:
    firsts, seconds = post.getlist(first), post.getlist(second)
    size = max(len(firsts), len(seconds))
    firsts += [""] * (size - len(firsts))
    seconds += [""] * (size - len(seconds))
    return [Row(a.strip(), b.strip()) for a, b in zip(firsts, seconds, strict=True)]


def _version(post: QueryDict) -> int:
    number = schedule_config.int_from_text(post.get("version", ""))
    return -1 if number is None else number


def form_from_post(post: QueryDict) -> ScheduleForm:
    values: dict[str, Any] = {key: key in post for key in BOOLEAN_FIELDS}
    for key in (*TEXT_FIELDS, "holiday_calendar", "winding_reasoning_effort", "safety_max_tokens"):
        values[key] = post.get(key, "")
    for key in LINE_FIELDS:
        values[key] = post.get(key, "")
    return ScheduleForm(
        values=values,
        anchors=_rows(post, "anchor_time", "anchor_tokens"),
        peak_windows=_rows(post, "peak_start", "peak_end"),
        weekdays={
            day: {key: post.get(f"wd_{day}_{key}", "").strip() for key in NIGHT_KEYS}
            for day in WEEKDAYS
        },
        version=_version(post),
        settings=ScheduleSettingsForm(post),
    )


def _number(text: str) -> Any:
    """An integer if the text is one; otherwise the text itself, for the
    validation layer to reject with its own message."""
    number = schedule_config.int_from_text(text.strip().replace(",", "").replace("_", ""))
    return text if number is None else number


def anchor_rows(form: ScheduleForm) -> list[tuple[int, list[Any]]]:
    """The non-blank anchor rows as ``(row index in the form, [time, tokens])``."""
    return [
        (index, [row.first, _number(row.second)])
        for index, row in enumerate(form.anchors)
        if not row.blank
    ]


def changes_from_form(form: ScheduleForm) -> dict[str, Any]:
    """Every setting, typed, ready for ``apply_changes``: the plain ones from
    the Django form, the rows from their own widgets."""
    changes = form.settings.changes()
    changes["anchors"] = [row for _, row in anchor_rows(form)]
    changes["peak_windows"] = [
        [row.first, row.second] for row in form.peak_windows if not row.blank
    ]
    changes["weekdays"] = {
        day: {key: value for key, value in times.items() if value}
        for day, times in form.weekdays.items()
        if any(times.values())
    }
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
    try:
        base = schedule_config.apply_changes(saved, others)
    except ConfigError:
        base = schedule_config.with_defaults(saved)
    problems: dict[int, str] = {}
    accepted: list[list[Any]] = []
    for index, row in anchor_rows(form):
        try:
            schedule_config.apply_changes(base, {"anchors": [*accepted, row]})
        except ConfigError as exc:
            message = exc.errors.get("anchors") or next(iter(exc.errors.values()))
            problems[index] = _ROW_PREFIX.sub("", message)
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


def candidate(saved: Mapping[str, Any], form: ScheduleForm) -> Candidate:
    """Validate the whole form once; when it fails, keep every valid edit
    (and the valid anchor rows) so the preview can still be drawn honestly."""
    changes = changes_from_form(form)
    try:
        return Candidate(schedule_config.apply_changes(saved, changes), {}, [], {})
    except ConfigError as exc:
        errors = exc.errors
    problems, accepted = anchor_problems(saved, changes, form)
    attempt = dict(changes)
    if problems:
        attempt["anchors"] = accepted
    left_out: list[str] = []
    for _ in range(4):
        if not attempt.get("anchors"):
            attempt.pop("anchors", None)
        try:
            config = schedule_config.apply_changes(saved, attempt)
        except ConfigError as retry:
            for key in retry.errors:
                attempt.pop(key, None)
                left_out.append(key)
            continue
        break
    else:
        config = schedule_config.with_defaults(saved)
    if problems or "anchors" in errors:
        left_out.append("anchors")
    return Candidate(config, errors, sorted(set(left_out)), problems)
