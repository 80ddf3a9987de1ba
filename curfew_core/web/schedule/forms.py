"""The settings page's Django form, generated from the declared settings.

Each plain setting of ``ScheduleSettings`` (a bool, a text, a choice, a list
of texts, an optional text or number) becomes a form field whose widget, label,
help text, choices and ``maxlength`` come from its declaration; a setting added
there shows up here with no edit. The form does not validate: ``changes()``
hands typed values (``bool``, ``int``, ``None``, ``list[str]``) to the one
validation layer (``config.apply_changes``), and ``flag()`` puts what that layer
says on the field it names, so the page and the API can never disagree.

Row-shaped settings are below: anchors and peak windows as formsets (a spare
blank row, a row's problem as that row's error), the per-weekday times as one
form of a box per weekday and time.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from django import forms
from django.http import QueryDict
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy
from pydantic import StringConstraints

from curfew_core.schedules import values as v
from curfew_core.schedules.declaration import Declaration, ScheduleSettings, settings_of

#: How the page shows a free text (presentation only; the type decides the rest).
TEXTAREA_FIELDS = frozenset({"tired_persona"})
#: Words for a choice's options where the value alone says too little
#: (presentation only; the declared type decides what the options are).
CHOICE_LABELS: dict[str, dict[str, Any]] = {
    "curve": {
        "linear": gettext_lazy("Even: steadily shorter"),
        "step": gettext_lazy("Steps: hold, then drop"),
        "ease_in": gettext_lazy("Ease-in: hold high, then plunge"),
    },
    "winding_reasoning_effort": {"": gettext_lazy("Leave as the client set it")},
}
#: Which runs of fields the page lays out together (presentation only). A
#: declared setting named in none of them is shown at the end of ``scope``.
FIELDSETS: dict[str, tuple[str, ...]] = {
    "times": ("curfew_start", "lights_out", "wake_up"),
    "calendar": ("weekend_valley", "holiday_calendar", "extra_holidays", "extra_workdays"),
    "replies": ("off_duty_reply", "lights_out_reply"),
    "persona": ("tired_persona", "tier_texts"),
    "scope": ("dry_run",),
    # Picked by name (``web.replies.exempt_picker``), typing one still possible.
    "exempt": ("exempt_sessions", "exempt_purposes"),
    # What only the gateway's own workings explain: behind "For developers".
    "developer": (
        "deny_tools_when_off_duty",
        "apply_to_subagents",
        "winding_reasoning_effort",
        "safety_max_tokens",
    ),
}
#: The thinking levels in words (the wire values are OpenAI's names).
CHOICE_LABELS["winding_reasoning_effort"].update(
    {
        "minimal": gettext_lazy("Minimal: hardly any thinking"),
        "low": gettext_lazy("Low"),
        "medium": gettext_lazy("Medium"),
        "high": gettext_lazy("High"),
    }
)
#: Fields the page places one by one, outside a run.
PLACED = frozenset({"enabled", "timezone", "curve", "peak_shift"})
_SPLIT_DATES = re.compile(r"[\s,;]+")


class Kind(enum.Enum):
    CHECKBOX = "checkbox"
    TEXT = "text"
    FREE_TEXT = "free_text"
    CHOICE = "choice"
    LINES = "lines"
    DATES = "dates"
    NUMBER = "number"


def _unwrap(kind: Any) -> tuple[Any, list[Any]]:
    """The bare type and the metadata of ``Annotated[...]`` (nested ones flattened)."""
    metadata: list[Any] = []
    while get_origin(kind) is Annotated:
        kind, *extra = get_args(kind)
        metadata.extend(extra)
    return kind, metadata


def _optional(kind: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True); a union of literals is merged into one literal."""
    if get_origin(kind) not in (Union, UnionType):
        return kind, False
    items = [item for item in get_args(kind) if item is not NoneType]
    optional = len(items) < len(get_args(kind))
    if len(items) == 1:
        return items[0], optional
    if all(get_origin(item) is Literal for item in items):
        merged = [value for item in items for value in get_args(item)]
        return Literal[tuple(merged)], optional
    return kind, optional


def _constraint(metadata: list[Any], name: str) -> Any:
    for item in metadata:
        found = getattr(item, name, None)
        if found is not None:
            return found
    return None


def _patterns(metadata: list[Any]) -> list[Any]:
    return [item.pattern for item in metadata if isinstance(item, StringConstraints)]


def _choices(kind: Any) -> list[str] | None:
    if get_origin(kind) is Literal:
        return [str(value) for value in get_args(kind) if value != ""]
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return [str(member.value) for member in kind]
    return None


def _kind(
    annotation: Any, field_metadata: list[Any]
) -> tuple[Kind, list[Any], bool, list[str] | None] | None:
    """What field a setting gets (None: not a plain setting, it has its own widget).

    pydantic keeps a top-level ``Annotated``'s constraints in the field's
    metadata, and nested ones in the type: both are read."""
    kind, optional = _optional(annotation)
    kind, metadata = _unwrap(kind)
    metadata = [*field_metadata, *metadata]
    choices = _choices(kind)
    if kind is bool:
        return Kind.CHECKBOX, metadata, optional, None
    if choices is not None:
        return Kind.CHOICE, metadata, optional, choices
    if kind is int:
        return Kind.NUMBER, metadata, optional, None
    if kind is str:
        constraints = [item for item in metadata if isinstance(item, StringConstraints)]
        pattern = constraints[0].pattern if constraints else None
        # Free text (replies, persona) keeps its spaces; names and times are trimmed.
        free = (
            pattern in (v.TEXT_PATTERN, v.NONBLANK_PATTERN)
            and (_constraint(metadata, "max_length") or 0) >= v.MAX_TEXT
        )
        return (Kind.FREE_TEXT if free else Kind.TEXT), metadata, optional, None
    if get_origin(kind) is list:
        item, item_metadata = _unwrap(get_args(kind)[0])
        if item is str:
            patterns = [m.pattern for m in item_metadata if isinstance(m, StringConstraints)]
            dates = v.DATE_PATTERN in patterns
            return (Kind.DATES if dates else Kind.LINES), item_metadata, optional, None
    return None


def _field(
    name: str, annotation: Any, field_metadata: list[Any], label: str, help_text: str
) -> tuple[forms.Field, Kind, bool] | None:
    found = _kind(annotation, field_metadata)
    if found is None:
        return None
    kind, metadata, optional, choices = found
    attrs: dict[str, Any] = {"aria-describedby": f"err-{name}"}
    field: forms.Field
    if kind is Kind.CHECKBOX:
        field = forms.BooleanField(required=False)
    elif kind is Kind.CHOICE:
        words = CHOICE_LABELS.get(name, {})
        options: list[tuple[str, Any]] = []
        if optional:
            options.append(("", words.get("", gettext_lazy("None"))))
        options += [(choice, words.get(choice, choice)) for choice in choices or []]
        # A text field with a picker: the value is checked by the validation
        # layer, not by Django's choice check (one set of messages).
        field = forms.CharField(required=False, widget=forms.Select(choices=options))
    else:
        max_length = _constraint(metadata, "max_length")
        if max_length is not None and kind in (Kind.TEXT, Kind.FREE_TEXT):
            # The browser's limit only; the validation layer names an overlong text.
            attrs["maxlength"] = str(max_length)
        if kind is Kind.NUMBER:
            attrs.update({"class": "num", "inputmode": "numeric", "autocomplete": "off"})
        if v.TIME_PATTERN in _patterns(metadata):
            attrs.update(
                {
                    "class": "time",
                    "inputmode": "numeric",
                    "autocomplete": "off",
                    "maxlength": "8",
                    "placeholder": "HH:MM",
                }
            )
        widget: forms.Widget = forms.TextInput()
        if kind in (Kind.LINES, Kind.DATES) or name in TEXTAREA_FIELDS:
            widget = forms.Textarea(attrs={"rows": 4 if kind is Kind.LINES else 3})
        field = forms.CharField(required=False, strip=False, widget=widget)
    field.widget.attrs.update(attrs)
    field.label = gettext_lazy(label)
    field.help_text = gettext_lazy(help_text)
    return field, kind, optional


def _number(text: str) -> int | str:
    """An integer if the text is one; otherwise the text, for the validation
    layer to reject in its own words."""
    number = v.int_from_text(text.strip().replace(",", "").replace("_", ""))
    return text if number is None else number


class SettingsForm(forms.Form):
    """The plain settings; subclasses are made by ``settings_form_class``."""

    declaration: ClassVar[Declaration] = ScheduleSettings
    #: Each field's kind and whether the setting may be ``None``.
    kinds: ClassVar[dict[str, tuple[Kind, bool]]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "f-%s")
        super().__init__(*args, **kwargs)

    @classmethod
    def initial_from(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """Widget values for a canonical config."""
        initial: dict[str, Any] = {}
        for name, (kind, _optional) in cls.kinds.items():
            value = config.get(name)
            if kind in (Kind.LINES, Kind.DATES):
                initial[name] = "\n".join(str(item) for item in value or [])
            elif kind is Kind.CHECKBOX:
                initial[name] = bool(value)
            else:
                initial[name] = "" if value is None else str(value)
        return initial

    def typed(self, name: str, raw: Any) -> Any:
        kind, optional = self.kinds[name]
        if kind is Kind.CHECKBOX:
            return bool(raw)
        text = "" if raw is None else str(raw)
        if kind is Kind.LINES:
            return [line.strip() for line in text.splitlines() if line.strip()]
        if kind is Kind.DATES:
            return [item for item in _SPLIT_DATES.split(text) if item]
        if kind is not Kind.FREE_TEXT:
            text = text.strip()
        if optional and not text:
            return None
        if kind is Kind.NUMBER:
            return _number(text)
        return text

    def changes(self) -> dict[str, Any]:
        """Every plain setting, typed, for ``apply_changes``: as posted when
        bound, else as the config it was made from."""
        return {name: self.typed(name, self[name].value()) for name in self.fields}

    def set_choices(self, name: str, choices: list[Any]) -> None:
        """A picker for a text setting whose options only the running site
        knows (zones, calendars); the value is still checked by the layer."""
        field = self.fields[name]
        field.widget = forms.Select(choices=choices, attrs=field.widget.attrs)

    @property
    def fieldsets(self) -> dict[str, list[forms.BoundField]]:
        """The fields in the page's runs; unplaced ones end ``scope``."""
        placed = {name for names in FIELDSETS.values() for name in names} | PLACED
        runs = {
            run: [self[name] for name in names if name in self.fields]
            for run, names in FIELDSETS.items()
        }
        runs["scope"] += [self[name] for name in self.fields if name not in placed]
        return runs

    def flag(self, errors: Mapping[str, str]) -> None:
        """Put the validation layer's messages on the fields they name."""
        for name, message in errors.items():
            if name in self.fields:
                self.fields[name].widget.attrs["aria-invalid"] = "true"
                if self.is_bound:
                    self.is_valid()  # add_error needs a cleaned form
                    self.add_error(name, message)


def settings_form_class(declaration: Declaration = ScheduleSettings) -> type[SettingsForm]:
    """A ``SettingsForm`` with one field per plain setting of ``declaration``."""
    kinds: dict[str, tuple[Kind, bool]] = {}
    attrs: dict[str, Any] = {"declaration": declaration, "kinds": kinds}
    for name, setting in settings_of(declaration).items():
        declared = declaration.model_fields[name]
        found = _field(name, declared.annotation, declared.metadata, setting.label, setting.help)
        if found is not None:
            attrs[name], kind, optional = found
            kinds[name] = (kind, optional)
    return type(f"{declaration.__name__}Form", (SettingsForm,), attrs)


ScheduleSettingsForm = settings_form_class()


# -- row-shaped settings: formsets, and one form for the per-weekday times ----

#: Blank rows offered at the end of a repeatable table, so adding works without script.
SPARE_ROWS = 1


def _time_input(label: Any) -> forms.CharField:
    attrs = {
        "class": "time",
        "inputmode": "numeric",
        "autocomplete": "off",
        "maxlength": "8",
        "placeholder": "HH:MM",
        "aria-label": label,
    }
    return forms.CharField(required=False, label=label, widget=forms.TextInput(attrs=attrs))


class RowForm(forms.Form):
    """One row of a table setting, as typed; its problem is a non-field error."""

    columns: ClassVar[tuple[str, str]]

    def cells(self) -> tuple[str, str]:
        first, second = (str(self[name].value() or "").strip() for name in self.columns)
        return first, second

    @property
    def blank(self) -> bool:
        return not any(self.cells())

    def flag(self, message: str) -> None:
        self.is_valid()  # add_error needs a cleaned form
        self.add_error(None, message)


class AnchorForm(RowForm):
    columns = ("time", "tokens")
    time = _time_input(gettext_lazy("Anchor time"))
    tokens = forms.CharField(
        required=False,
        label=gettext_lazy("Anchor max tokens"),
        widget=forms.TextInput(
            attrs={
                "class": "num",
                "inputmode": "numeric",
                "autocomplete": "off",
                "maxlength": "9",
                "placeholder": gettext_lazy("tokens"),
                "aria-label": gettext_lazy("Anchor max tokens"),
            }
        ),
    )


class PeakWindowForm(RowForm):
    columns = ("start", "end")
    start = _time_input(gettext_lazy("Peak hours start"))
    end = _time_input(gettext_lazy("Peak hours end"))


AnchorFormSet = forms.formset_factory(AnchorForm, extra=SPARE_ROWS)
PeakWindowFormSet = forms.formset_factory(PeakWindowForm, extra=SPARE_ROWS)


def rows_of(formset: forms.BaseFormSet[Any]) -> list[tuple[int, tuple[str, str]]]:
    """The non-blank rows as ``(row index, cells)``."""
    return [(index, row.cells()) for index, row in enumerate(formset.forms) if not row.blank]


def with_spare_row(formset: forms.BaseFormSet[Any]) -> forms.BaseFormSet[Any]:
    """A bound formset again with one blank row at the end if it has none
    (an unbound one has ``extra``), so a re-rendered page can still add."""
    if not formset.is_bound or (formset.forms and formset.forms[-1].blank):
        return formset
    data = QueryDict(mutable=True)
    data.update(formset.data)
    data[f"{formset.prefix}-TOTAL_FORMS"] = str(formset.total_form_count() + 1)
    return type(formset)(data, prefix=formset.prefix)


#: The page's day choices for the night. A day means the morning a night wakes
#: on, as a sleep schedule reads ("up at 08:00 on weekdays"): the weekday
#: nights are the evenings Sunday to Thursday. The stored per-weekday times
#: stay keyed by the evening a night starts on (the engine's rule), so this
#: is the page's reading only and nothing stored changes meaning.
NIGHT_DAYS: dict[str, Any] = {
    "every": gettext_lazy("Every day"),
    "weekdays": gettext_lazy("Weekdays differ"),
    "custom": gettext_lazy("Customise days"),
}
#: The evenings whose nights wake on a weekday (Monday to Friday).
WEEKDAY_EVENINGS: tuple[str, ...] = ("sun", "mon", "tue", "wed", "thu")
NIGHT_LABELS: dict[str, Any] = {
    "curfew_start": gettext_lazy("Gets sleepy at"),
    "lights_out": gettext_lazy("Asleep at"),
    "wake_up": gettext_lazy("Wakes at"),
}


def _weekday_fields() -> dict[str, Any]:
    from django.utils.dates import WEEKDAYS as DAY_NAMES

    fields: dict[str, Any] = {
        "night_days": forms.ChoiceField(
            required=False,
            choices=list(NIGHT_DAYS.items()),
            widget=forms.RadioSelect,
            label=gettext_lazy("Days"),
        )
    }
    for key in v.NIGHT_KEYS:
        field = _time_input(format_lazy("{} {}", gettext_lazy("On weekdays:"), NIGHT_LABELS[key]))
        # Shown under its own heading ("On weekdays: ..."), so the visible
        # label is the plain one; screen readers get the whole name.
        field.short_label = NIGHT_LABELS[key]  # type: ignore[attr-defined]
        fields[f"wg_{key}"] = field
    for index, day in enumerate(v.WEEKDAYS):
        # The night from this evening to the next morning, named by both, so
        # the row reads right whichever way a person counts a night.
        night = format_lazy("{} → {}", DAY_NAMES[index], DAY_NAMES[(index + 1) % 7])
        for key in v.NIGHT_KEYS:
            field = _time_input(format_lazy("{}: {}", night, NIGHT_LABELS[key]))
            field.day_name = night  # type: ignore[attr-defined]
            fields[f"wd_{day}_{key}"] = field
    return fields


def night_days_of(weekdays: Mapping[str, Mapping[str, str]]) -> str:
    """Which day choice stored per-weekday times read as: none is every day,
    the same times on exactly the weekday evenings is "weekdays differ",
    anything else is customised."""
    if not weekdays:
        return "every"
    first = weekdays.get(WEEKDAY_EVENINGS[0])
    if set(weekdays) == set(WEEKDAY_EVENINGS) and all(
        weekdays[day] == first for day in WEEKDAY_EVENINGS
    ):
        return "weekdays"
    return "custom"


class WeekdaysForm(forms.Form):
    """The night's days: a choice (every day, weekdays differ, customise),
    the weekday times, and a box per weekday and time, empty for the default."""

    locals().update(_weekday_fields())

    def times(self) -> dict[str, dict[str, str]]:
        return {
            day: {key: str(self[f"wd_{day}_{key}"].value() or "").strip() for key in v.NIGHT_KEYS}
            for day in v.WEEKDAYS
        }

    @property
    def mode(self) -> str:
        chosen = str(self["night_days"].value() or "")
        # A post without the choice (an older page, a script) keeps the table.
        return chosen if chosen in NIGHT_DAYS else "custom"

    def changes(self) -> dict[str, dict[str, str]]:
        """The per-weekday times the chosen days mean. A wrong time is handed
        on as typed, for the validation layer to name."""
        if self.mode == "every":
            return {}
        if self.mode == "weekdays":
            group: dict[str, str] = {
                key: value
                for key in v.NIGHT_KEYS
                if (value := str(self[f"wg_{key}"].value() or "").strip())
            }
            return {day: dict(group) for day in WEEKDAY_EVENINGS} if group else {}
        return {
            day: {key: value for key, value in times.items() if value}
            for day, times in self.times().items()
            if any(times.values())
        }

    @property
    def group(self) -> list[tuple[Any, forms.BoundField]]:
        """The weekday times' boxes with their plain labels."""
        return [
            (self.fields[f"wg_{key}"].short_label, self[f"wg_{key}"])  # type: ignore[attr-defined]
            for key in v.NIGHT_KEYS
        ]

    @property
    def rows(self) -> list[tuple[Any, list[forms.BoundField]]]:
        """One table row per weekday: its (translated) night and its boxes."""
        return [
            (
                self.fields[f"wd_{day}_curfew_start"].day_name,  # type: ignore[attr-defined]
                [self[f"wd_{day}_{key}"] for key in v.NIGHT_KEYS],
            )
            for day in v.WEEKDAYS
        ]

    def with_placeholders(self, config: Mapping[str, Any]) -> WeekdaysForm:
        """An empty box shows the default time it stands for."""
        for name, field in self.fields.items():
            if name.startswith(("wd_", "wg_")):
                key = name.split("_", 2)[2] if name.startswith("wd_") else name[3:]
                field.widget.attrs["placeholder"] = config.get(key, "HH:MM") or "HH:MM"
        return self

    @staticmethod
    def initial_from(config: Mapping[str, Any]) -> dict[str, str]:
        weekdays = config["weekdays"]
        initial = {
            f"wd_{day}_{key}": times.get(key, "")
            for day, times in weekdays.items()
            for key in v.NIGHT_KEYS
        }
        initial["night_days"] = night_days_of(weekdays)
        if initial["night_days"] == "weekdays":
            initial.update(
                {f"wg_{key}": weekdays[WEEKDAY_EVENINGS[0]].get(key, "") for key in v.NIGHT_KEYS}
            )
        return initial
