"""A section of the settings form (Schedule, Replies & voice): its form and
live preview (GET), and its own save (POST), which touches only its settings.

Full pages work without script; with htmx the same doors answer partials
(``HX-Request: true``) so the page updates in place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.declaration import labels_of, settings_of
from curfew_core.selectors import web as web_selectors
from curfew_core.services.schedules import StaleVersion, schedule_update
from curfew_core.web import words
from curfew_core.web.schedule import choices, contexts, presets, saving, schedule_form, team_line
from curfew_core.web.schedule.keys import FORM_KEYS
from curfew_core.web.schedule.saving import Saved, Shown
from curfew_core.web.schedule.schedule_form import ScheduleForm
from curfew_core.web.shell import (
    HTMX_INVALID,
    View,
    base_context,
    is_htmx,
    login_required_page,
    rendered,
    user_of,
)

SECTION_TEMPLATES = {"schedule": "curfew/schedule.html", "replies": "curfew/replies.html"}


@dataclass(frozen=True, slots=True)
class FormSection:
    """A section of the settings form (Schedule, Replies & voice): it saves
    only its own settings (``keys.FORM_KEYS``); its page may read its posts
    first and show more beside the form."""

    code: str
    #: The post as the form reads it (Replies: the exemption pickers' ticks
    #: become their settings' lines first).
    read_post: Callable[[QueryDict], QueryDict] | None = None
    #: What the page shows beside the form: ``(user, form, tz_name) -> context``.
    beside: Callable[[Any, ScheduleForm, str], dict[str, Any]] | None = None
    #: The line saying a team policy applies (``team_line.html``).
    team_line: bool = False

    @property
    def keys(self) -> frozenset[str]:
        return FORM_KEYS[self.code]

    @property
    def template(self) -> str:
        return SECTION_TEMPLATES[self.code]


#: Each setting's label, from the declaration (translated when shown).
FIELD_LABELS = {key: gettext_lazy(label) for key, label in labels_of().items()}
#: As the team's schedule names them (``Setting.team_label``).
TEAM_FIELD_LABELS = {key: gettext_lazy(label) for key, label in labels_of(team=True).items()}
#: The settings the team's schedule names otherwise (``Setting.team_label``).
_TEAM_OWN_LABELS = frozenset(key for key, setting in settings_of().items() if setting.team_label)
#: The help texts the team's schedule says otherwise (``Setting.team_help``).
_TEAM_HELP = {
    key: gettext_lazy(setting.team_help)
    for key, setting in settings_of().items()
    if setting.team_help
}


def labelled(errors: dict[str, str], *, team: bool = False) -> list[tuple[str, str]]:
    names = TEAM_FIELD_LABELS if team else FIELD_LABELS
    return [(str(names.get(key, key)), message) for key, message in errors.items()]


def for_team(form: ScheduleForm) -> None:
    """The form's fields named and explained as the team's schedule does, where
    a person's words speak of their own (``Setting.team_label``, ``team_help``)."""
    settings_form = form.settings
    for key in _TEAM_OWN_LABELS:
        if key in settings_form.fields:
            settings_form.fields[key].label = TEAM_FIELD_LABELS[key]
    for key, help_text in _TEAM_HELP.items():
        if key in settings_form.fields:
            settings_form.fields[key].help_text = help_text
    for key in _TEAM_OWN_LABELS | _TEAM_HELP.keys():
        # A bound field made before keeps the label it saw.
        settings_form._bound_fields_cache.pop(key, None)  # type: ignore[attr-defined]


def with_choices(form: ScheduleForm) -> None:
    """Pickers for the settings whose options the running site knows."""
    settings_form = form.settings
    settings_form.set_choices("timezone", choices.timezone_groups())
    calendars: list[tuple[str, Any]] = [("", _("None")), *choices.calendar_choices()]
    current = str(settings_form["holiday_calendar"].value() or "").strip()
    if current and current not in dict(calendars):
        # A sub-region (US-CA) is no entry of the list: offer it as it is.
        calendars.append((current, current))
    settings_form.set_choices("holiday_calendar", calendars)


def _form_context(
    request: HttpRequest,
    *,
    form: ScheduleForm,
    section: FormSection,
    params: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """A settings form (Schedule or Replies & persona) and its live preview."""
    user = user_of(request)
    saved = web_selectors.saved_schedule(user)
    status = contexts.now_context(user, timezone.now())
    query = request.GET if params is None else params
    preview = contexts.preview(
        saved.config, form, at=status["as_of"], params=query, team=status["bundle"].team
    )
    form.with_spare_rows()
    if form.errors:
        form.flag_rows(preview.candidate.row_problems)
    with_choices(form)
    if section.beside is not None:
        for key, value in section.beside(user, form, status["timezone"]).items():
            extra.setdefault(key, value)
    return base_context(
        request,
        section.code,
        line=team_line.line if section.team_line else None,
        **status,
        form=form,
        errors=form.errors,
        error_list=labelled(form.errors),
        preview=preview,
        live_errors=form.errors,
        curves=["linear", "step", "ease_in"],
        presets=presets.persona_presets(),
        reply_presets=presets.reply_presets(),
        **words.band_words(),
        hours=range(25),
        **extra,
    )


def _render_section(
    request: HttpRequest,
    section: FormSection,
    *,
    form: ScheduleForm,
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    context = _form_context(request, form=form, section=section, **extra)
    if status == 200 and context["preview"].band_error:
        # A bad band date is flagged on the page, and the answer says it was
        # bad input like any other door.
        status = 400
    template = section.template
    if is_htmx(request) and request.method == "POST":
        # Saved or refused in place: the form alone, no reload, no jump.
        template = f"{template}#section-form"
        status = HTMX_INVALID if status == 400 else status
    return rendered(request, template, context, status=status)


def _saved_form(request: HttpRequest, keys: frozenset[str] | None = None) -> ScheduleForm:
    saved = web_selectors.saved_schedule(user_of(request))
    form = schedule_form.form_from_config(saved.config, saved.version)
    form.keys = keys
    return form


def section_page(section: FormSection) -> View:
    @login_required_page
    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            return _answer(request, section, _save(request, section))
        return _render_section(request, section, form=_saved_form(request, section.keys))

    view.__name__ = f"{section.code}_section"
    view.__doc__ = f"The {section.code} section: its form (GET) and its own save (POST)."
    return view


def _save(request: HttpRequest, section: FormSection) -> Shown | Saved:
    """The section's save: the post read as the form, the one service call,
    its outcome. A preset button pressed without script fills the form in
    instead, and saves nothing (``presets``)."""
    post = request.POST if section.read_post is None else section.read_post(request.POST)
    filled = presets.filled(post)
    if filled is not None:
        form = schedule_form.form_from_post(filled, section.keys)
        return Shown(form, words={"notice": str(presets.NOTICE)})
    form = schedule_form.form_from_post(post, section.keys)
    user = user_of(request)
    try:
        row = schedule_update(
            user=user,
            changes=schedule_form.changes_from_form(form),
            expected_version=form.version,
            source="form",
            actor=user,
            channel="page",
            own_settings=section.keys,
        )
    except schedule_config.ConfigError as exc:
        form.flag(words.localized_errors(exc.errors))
        return Shown(form, status=400)
    except StaleVersion as exc:
        return _stale(user, form, exc)
    return Saved(changed=row.version != form.version)


def _stale(user: Any, form: ScheduleForm, exc: StaleVersion) -> Shown:
    """Saved elsewhere meanwhile, in one of this section's settings: the
    person decides, with what changed named. What they typed is kept; the
    next Save is a deliberate overwrite of the version now shown."""
    changed = web_selectors.fields_changed_since(user, exc.expected) or []
    form.version = exc.current
    names = [str(FIELD_LABELS.get(key, key)) for key in changed]
    return Shown(form, status=409, words={"stale": {"changed": names}})


def _answer(request: HttpRequest, section: FormSection, outcome: Shown | Saved) -> HttpResponse:
    return saving.answer(
        request,
        outcome,
        show=functools.partial(_render_section, request, section),
        saved_form=functools.partial(_saved_form, request, section.keys),
        said=_("Saved."),
        back=reverse(f"settings-{section.code}"),
    )
