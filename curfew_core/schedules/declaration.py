"""The schedule settings, declared once.

``ScheduleSettings`` is the one declaration of every setting: its type, its
default, its bounds and text pattern (from ``schema.values``), its English
label and help text (translated through the zh_Hans catalogue), the seed
plugin's camelCase name for ``import-config``, and the parser that validates
it. Everything else derives from it: ``config.DEFAULTS`` and the validators,
the OpenAPI ``Settings`` schema, the page's labels, the import's renames, and
the engine's ``Schedule`` (built here, in one place).

Adding a setting: one field here plus its engine rule (docs/subsystems/layout.md, "Adding a
setting"). The derivations take the declaration as an argument, so a test can
extend it with a throwaway setting and see every door pick it up.
"""

from __future__ import annotations

import functools
import pickle
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from typing_extensions import TypedDict

from curfew_core.engine import Anchor, Curve, NightTimes, Schedule, parse_wall
from curfew_core.engine.schedule import (
    DEFAULT_EXEMPT_PURPOSES,
    DEFAULT_PERSONA_ZH,
    DEFAULT_TIER_TEXTS_ZH,
    purpose_key,
)
from curfew_core.schedules import calendars
from curfew_core.schedules import values as v


@dataclass(frozen=True, slots=True)
class Setting:
    """What a setting is besides its type: how people and the plugin name it,
    and the parser the validation layer runs on it."""

    #: English, marked for translation (``gettext`` it where it is shown).
    label: str
    #: English, marked for translation; also the OpenAPI ``description``.
    help: str
    #: JSON value in, canonical JSON value out; raises ``values.Invalid``.
    parse: Callable[[Any], Any]
    #: The seed plugin's camelCase key, for ``import-config``; None if it had none.
    alias: str | None = None
    #: Added to the OpenAPI description only: what the API says about refusals.
    api_note: str = ""
    #: The label on the team's schedule (``/team/schedule/``) where ``label``
    #: speaks of the person's own; empty: ``label`` there too.
    team_label: str = ""
    #: The help text there, where ``help`` speaks of the person's own AI.
    team_help: str = ""


# -- value shapes: JSON schema constraints from the limits in schema.values --
Time = Annotated[str, StringConstraints(pattern=v.TIME_PATTERN), Field(examples=["23:00"])]
Tokens = Annotated[int, Field(ge=1, le=v.MAX_TOKENS_LIMIT)]
Name = Annotated[str, StringConstraints(max_length=v.MAX_NAME, pattern=v.TEXT_PATTERN)]
Text = Annotated[str, StringConstraints(max_length=v.MAX_TEXT, pattern=v.TEXT_PATTERN)]
Reply = Annotated[str, StringConstraints(max_length=v.MAX_TEXT, pattern=v.NONBLANK_PATTERN)]
TierText = Annotated[str, StringConstraints(max_length=v.MAX_TIER_TEXT, pattern=v.NONBLANK_PATTERN)]
SessionId = Annotated[
    str, StringConstraints(max_length=v.MAX_SESSION_ID, pattern=v.NONBLANK_PATTERN)
]
Date = Annotated[
    str, StringConstraints(pattern=v.DATE_PATTERN), Field(json_schema_extra={"format": "date"})
]
Dates = Annotated[list[Date], Field(max_length=v.MAX_EXTRA_HOLIDAYS)]
Purpose = Annotated[
    str,
    StringConstraints(min_length=1, max_length=v.MAX_PURPOSE, pattern=v.PURPOSE_PATTERN),
    Field(examples=["title"]),
]
SafetyCap = Annotated[int, Field(ge=v.MIN_SAFETY_MAX_TOKENS, le=v.MAX_TOKENS_LIMIT)]


class NightOverride(TypedDict, total=False):
    """One weekday's own night times; a missing one is the default's."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    curfew_start: Time
    lights_out: Time
    wake_up: Time


def gettext_noop(text: str) -> str:
    """Marks ``text`` for translation (``makemessages`` finds it by this name)
    without Django: the declaration is read before settings are configured."""
    return text


_ = gettext_noop


#: What the API says of both replies: ``v.reply_parser`` fills ``{until}`` only.
_REPLY_NOTE = "Any other {word} (a typo like {untill}) is refused with 422."


class ScheduleSettings(BaseModel):
    """Every schedule setting (snake_case, as the API and the database hold them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: Annotated[
        bool,
        Setting(
            _("Curfew on"),
            _("Off: your AI works normally at every hour."),
            v.parse_bool,
            alias="enabled",
            team_help=_(
                "Off: the team's schedule holds nothing back; each member's own still applies."
            ),
        ),
    ] = True
    timezone: Annotated[
        str,
        StringConstraints(min_length=1, max_length=v.MAX_NAME, pattern=v.TEXT_PATTERN),
        Field(examples=["Asia/Shanghai"]),
        Setting(
            _("Time zone"),
            _("Where you are: every time of your schedule is read on this clock."),
            v.parse_timezone,
            alias="timezone",
            api_note="An unknown zone is refused with 422.",
        ),
    ] = "Asia/Shanghai"
    wake_up: Annotated[
        Time,
        Setting(
            _("Wakes at"),
            _("Your AI is back at work: the night ends."),
            v.parse_time,
            alias="wakeUp",
            team_help=_("The members' AI is back at work: the team's night ends."),
        ),
    ] = "09:00"
    curfew_start: Annotated[
        Time,
        Setting(
            _("Gets sleepy at"),
            _("The wind-down starts: answers get shorter and shorter."),
            v.parse_time,
            alias="curfewStart",
        ),
    ] = "23:00"
    lights_out: Annotated[
        Time,
        Setting(
            _("Asleep at"),
            _("From here until it wakes, your AI is asleep: no model calls."),
            v.parse_time,
            alias="lightsOut",
            team_help=_("From here until it wakes, the members' AI is asleep: no model calls."),
        ),
    ] = "03:00"
    weekdays: Annotated[
        dict[v.Weekday, NightOverride],
        Setting(
            _("Per-weekday times"),
            _("Night times for single weekdays; a night belongs to the evening it starts on."),
            v.parse_weekdays,
        ),
    ] = Field(default_factory=dict)
    anchors: Annotated[
        list[tuple[Time, Tokens]],
        Field(min_length=1, max_length=v.MAX_ANCHORS),
        Setting(
            _("Wind-down points"),
            _("The longest answer from each time on, through the wind-down."),
            v.parse_anchors,
            alias="anchors",
            api_note=(
                '["HH:MM", tokens] rows on the default night; one outside the window is'
                " refused with 422. The curve belongs to the night: a change of curfew_start"
                " or lights_out that leaves anchors as they were moves them with it, each"
                " keeping its place through the wind-down, so moving the night back gives"
                " the same times to the minute."
            ),
        ),
    ] = [("23:00", 2048), ("00:00", 1600), ("01:00", 800), ("02:00", 320), ("03:00", 64)]
    curve: Annotated[
        Curve,
        Setting(
            _("Wind-down shape"),
            _("How answers get shorter between two points."),
            v.parse_curve,
            alias="curve",
        ),
    ] = Curve.LINEAR
    peak_shift: Annotated[
        bool,
        Setting(
            _("Rest during peak hours"),
            _("Your AI stays off during your provider's busy, full-price hours on workdays."),
            v.parse_bool,
            alias="peakShift",
            team_help=_(
                "The members' AI stays off during the provider's busy, full-price hours on"
                " workdays."
            ),
        ),
    ] = True
    peak_windows: Annotated[
        list[tuple[Time, Time]],
        Field(max_length=v.MAX_WINDOWS),
        Setting(
            _("Peak hours"),
            _("The busy hours of a workday, each from one time to another."),
            v.parse_windows,
            alias="peakWindows",
        ),
    ] = [("09:00", "12:00"), ("14:00", "18:00")]
    weekend_valley: Annotated[
        bool,
        Setting(
            _("No peak hours at weekends"),
            _("Saturdays and Sundays are like holidays: your AI works all day."),
            v.parse_bool,
            alias="weekendValley",
            team_help=_("Saturdays and Sundays are like holidays: the members' AI works all day."),
        ),
    ] = True
    holiday_calendar: Annotated[
        Name | None,
        Setting(
            _("Public holidays of"),
            _("No peak hours on this country's public holidays; None for no holidays."),
            v.parse_holiday_calendar,
            api_note="An unknown one is refused with 422.",
        ),
    ] = "CN"
    extra_holidays: Annotated[
        Dates,
        Setting(
            _("Your own days off"),
            _("Dates with no peak hours, one a line, written like 2026-10-08."),
            v.parse_dates,
            alias="holidays",
            team_label=_("The team's days off"),
        ),
    ] = Field(default_factory=list)
    extra_workdays: Annotated[
        Dates,
        Setting(
            _("Days you work anyway"),
            _(
                "Weekend or holiday dates that keep their peak hours, written like 2026-10-10;"
                " yours win over the calendar's."
            ),
            v.parse_dates,
            api_note="A date also in extra_holidays is refused with 422.",
            team_label=_("Days the team works anyway"),
            team_help=_(
                "Weekend or holiday dates that keep their peak hours, written like 2026-10-10;"
                " the team's win over the calendar's."
            ),
        ),
    ] = Field(default_factory=list)
    off_duty_reply: Annotated[
        Reply,
        Setting(
            _("Reply during peak hours"),
            _(
                "What your AI answers instead, during peak hours. {until} becomes the time"
                " the peak hours end (or a switch-off by hand does)."
            ),
            v.reply_parser(),
            api_note=_REPLY_NOTE,
            alias="offDutyReply",
        ),
    ] = "。"
    lights_out_reply: Annotated[
        Reply,
        Setting(
            _("Reply while asleep"),
            _(
                "What your AI answers instead, while asleep. {until} becomes the time it"
                " wakes up, or the end of a switch-off by hand."
            ),
            v.reply_parser(),
            api_note=_REPLY_NOTE,
            alias="lightsOutReply",
        ),
    ] = "明天再说。"
    tired_persona: Annotated[
        Text,
        Setting(
            _("Sleepy voice"),
            _(
                "Told to your AI while it gets sleepy, so that short answers read as tired,"
                " not cut off. For developers: it is added to the system prompt."
            ),
            v.text_parser(allow_empty=True),
            alias="tiredPersona",
        ),
    ] = DEFAULT_PERSONA_ZH
    tier_texts: Annotated[
        list[TierText],
        Field(min_length=1, max_length=v.MAX_TIERS),
        Setting(
            _("As the night goes on"),
            _(
                "One line a stage of the night, from a little tired to exhausted; each is"
                " added after the sleepy voice in its turn."
            ),
            v.parse_tier_texts,
            alias="tierTexts",
        ),
    ] = Field(default_factory=lambda: list(DEFAULT_TIER_TEXTS_ZH))
    deny_tools_when_off_duty: Annotated[
        bool,
        Setting(
            _("No tools while off"),
            _(
                "While off or asleep, the short reply never asks for a tool (running code,"
                " searching): your AI does nothing."
            ),
            v.parse_bool,
            alias="denyToolsWhenOffDuty",
        ),
    ] = True
    apply_to_subagents: Annotated[
        bool,
        Setting(
            _("Helper agents keep the same hours"),
            _(
                "Agents your AI starts for part of a task (subagents) follow this schedule"
                " too. Off: they are always let through."
            ),
            v.parse_bool,
            alias="applyToSubagents",
        ),
    ] = True
    winding_reasoning_effort: Annotated[
        v.ReasoningEffort | Literal[""] | None,
        Setting(
            _("Thinking while sleepy"),
            _(
                "How hard a thinking model may think while your AI gets sleepy (its"
                " reasoning effort): less thinking, quicker and cheaper answers."
            ),
            v.parse_reasoning_effort,
            alias="windingReasoningEffort",
        ),
    ] = None
    dry_run: Annotated[
        bool,
        Setting(
            _("Only watch"),
            _(
                "Curfew decides and reports what it would do, and holds nothing back: try a"
                " schedule first."
            ),
            v.parse_bool,
            alias="dryRun",
        ),
    ] = False
    safety_max_tokens: Annotated[
        SafetyCap | None,
        Setting(
            _("Answer limit while off (tokens)"),
            _(
                "The longest answer, in tokens, a gateway may still ask for while off or asleep"
                " (a safety cap). Empty: none, the default. At least 256: a thinking model"
                " given less fails the turn."
            ),
            v.parse_safety_max_tokens,
            alias="safetyMaxTokens",
        ),
    ] = None
    exempt_sessions: Annotated[
        list[SessionId],
        Field(max_length=v.MAX_EXEMPT_SESSIONS),
        Setting(
            _("Chats always let through"),
            _(
                "Sessions (a chat or a job, by the id your tool sends) that the curfew leaves"
                " alone, one a line."
            ),
            v.parse_sessions,
            alias="exemptSessions",
        ),
    ] = Field(default_factory=list)
    exempt_purposes: Annotated[
        list[Purpose],
        Field(max_length=v.MAX_EXEMPT_PURPOSES),
        Setting(
            _("Housekeeping always let through"),
            _(
                "Calls your AI tool marks as its own housekeeping (title: naming a chat; "
                "compaction, summary: shrinking a long chat) still go through at night. "
                "Any other purpose is treated like a normal call. Empty: none."
            ),
            v.parse_purposes,
            api_note=(
                f"At most {v.MAX_EXEMPT_PURPOSES} names of at most {v.MAX_PURPOSE} "
                "characters (a-z, 0-9, _ . -; a letter or digit first); matched "
                "case-insensitively, stored lowercase, a repeat folded into the first. "
                "A verdict request's purpose is exempt only if listed here. Default: "
                f"{', '.join(DEFAULT_EXEMPT_PURPOSES)}."
            ),
        ),
    ] = Field(default_factory=lambda: list(DEFAULT_EXEMPT_PURPOSES))

    def schedule(self, positions: tuple[Fraction, ...] = ()) -> Schedule:
        """The engine's ``Schedule``: the one place settings become engine values.
        ``positions``: the curve's places through the wind-down, as stored
        beside the settings (``config.POSITIONS``); none: read from ``anchors``."""

        def night(times: NightOverride) -> NightTimes:
            return NightTimes(
                parse_wall(times.get("curfew_start", self.curfew_start)),
                parse_wall(times.get("lights_out", self.lights_out)),
                parse_wall(times.get("wake_up", self.wake_up)),
            )

        return Schedule(
            timezone=zoneinfo.ZoneInfo(self.timezone),
            night=night({}),
            weekdays={
                index: night(self.weekdays[day])
                for index, day in enumerate(v.WEEKDAYS)
                if self.weekdays.get(day)
            },
            anchors=tuple(Anchor(parse_wall(at), tokens) for at, tokens in self.anchors),
            positions=positions,
            curve=Curve(self.curve),
            peak_shift=self.peak_shift,
            peak_windows=tuple((parse_wall(a), parse_wall(b)) for a, b in self.peak_windows),
            weekend_valley=self.weekend_valley,
            holidays=calendars.lookup(
                self.holiday_calendar, tuple(self.extra_holidays), tuple(self.extra_workdays)
            ),
            off_duty_reply=self.off_duty_reply,
            lights_out_reply=self.lights_out_reply,
            tired_persona=self.tired_persona,
            tier_texts=tuple(self.tier_texts),
            deny_tools_when_off_duty=self.deny_tools_when_off_duty,
            apply_to_subagents=self.apply_to_subagents,
            winding_reasoning_effort=self.winding_reasoning_effort or None,
            dry_run=self.dry_run,
            safety_max_tokens=self.safety_max_tokens,
            exempt_sessions=frozenset(self.exempt_sessions),
            # Keyed again (``build`` does not re-validate a stored config), by
            # the engine's one rule for what a purpose name is.
            exempt_purposes=frozenset(
                key for key in map(purpose_key, self.exempt_purposes) if key is not None
            ),
            enabled=self.enabled,
        )


Declaration = type[ScheduleSettings]


# -- derivations: each takes the declaration, so an extended one works too ----


@functools.cache
def settings_of(declaration: Declaration = ScheduleSettings) -> dict[str, Setting]:
    """Each setting's ``Setting``, in declaration order."""
    out: dict[str, Setting] = {}
    for name, field in declaration.model_fields.items():
        found = [item for item in field.metadata if isinstance(item, Setting)]
        if len(found) != 1:
            raise TypeError(f"{declaration.__name__}.{name} needs exactly one Setting(...)")
        out[name] = found[0]
    return out


@functools.cache
def _defaults(declaration: Declaration) -> bytes:
    # Kept pickled: unpickling is the cheapest fresh deep copy (a fifth of
    # ``copy.deepcopy``'s time), and every user's rows loaded start from one.
    return pickle.dumps(declaration().model_dump(mode="json"), protocol=pickle.HIGHEST_PROTOCOL)


def defaults_of(declaration: Declaration = ScheduleSettings) -> dict[str, Any]:
    """The canonical default config (JSON values), a fresh copy each call."""
    defaults: dict[str, Any] = pickle.loads(_defaults(declaration))  # noqa: S301 - our own bytes
    return defaults


def parsers_of(declaration: Declaration = ScheduleSettings) -> dict[str, Callable[[Any], Any]]:
    return {name: setting.parse for name, setting in settings_of(declaration).items()}


def labels_of(declaration: Declaration = ScheduleSettings, *, team: bool = False) -> dict[str, str]:
    """English labels, marked for translation (``gettext`` them to show); with
    ``team``, as the team's schedule names them (``Setting.team_label``)."""
    return {
        name: (setting.team_label if team and setting.team_label else setting.label)
        for name, setting in settings_of(declaration).items()
    }


def aliases_of(declaration: Declaration = ScheduleSettings) -> dict[str, str]:
    """The seed plugin's camelCase key -> the setting it names."""
    return {
        setting.alias: name
        for name, setting in settings_of(declaration).items()
        if setting.alias is not None
    }


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """The schema with every ``$ref`` into ``$defs`` replaced by its target and
    pydantic's generated ``title``s dropped (the document names nothing twice)."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out.update(_inline(defs[ref.removeprefix("#/$defs/")], defs))
    for key, value in node.items():
        if key in {"$ref", "title"}:
            continue
        # ``properties`` maps names to schemas: its keys are never keywords.
        out[key] = (
            {name: _inline(item, defs) for name, item in value.items()}
            if key == "properties"
            else _inline(value, defs)
        )
    return out


def json_schemas_of(declaration: Declaration = ScheduleSettings) -> dict[str, dict[str, Any]]:
    """Each setting's JSON schema (draft 2020-12, as OpenAPI 3.1 reads it),
    generated from the declaration, with its help text as ``description``."""
    generated = declaration.model_json_schema(mode="validation")
    defs = generated.get("$defs", {})
    out: dict[str, dict[str, Any]] = {}
    for name, setting in settings_of(declaration).items():
        schema = _inline(generated["properties"][name], defs)
        schema["description"] = " ".join(filter(None, (setting.help, setting.api_note)))
        out[name] = schema
    return out
