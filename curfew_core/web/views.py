"""The settings page's doors: parse the form, call one service, answer.

Full pages work without script; with htmx the same doors answer partials
(``HX-Request: true``) so the page updates in place.
"""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from curfew_core.engine import OverrideError
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import override_commands
from curfew_core.schedules.declaration import labels_of
from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import StaleVersion, informative_replies, schedule_update
from curfew_core.web import exempt_picker, page, schedule_form, words
from curfew_core.web.schedule_form import ScheduleForm
from curfew_core.web.sections import FORM_KEYS, SCHEDULE_KEYS
from curfew_core.web.shell import (
    HTMX_INVALID,
    View,
    base_context,
    is_htmx,
    login_required_page,
    no_store,
    user_of,
)

OVERVIEW = "curfew/overview.html"
SECTION_TEMPLATES = {"schedule": "curfew/schedule.html", "replies": "curfew/replies.html"}
#: Each setting's label, from the declaration (translated when shown).
FIELD_LABELS = {key: gettext_lazy(label) for key, label in labels_of().items()}


def _labelled(errors: dict[str, str]) -> list[tuple[str, str]]:
    return [(str(FIELD_LABELS.get(key, key)), message) for key, message in errors.items()]


def _with_choices(form: ScheduleForm) -> None:
    """Pickers for the settings whose options the running site knows."""
    settings_form = form.settings
    settings_form.set_choices("timezone", page.timezone_groups())
    calendars: list[tuple[str, Any]] = [("", _("None")), *page.calendar_choices()]
    current = str(settings_form["holiday_calendar"].value() or "").strip()
    if current and current not in dict(calendars):
        # A sub-region (US-CA) is no entry of the list: offer it as it is.
        calendars.append((current, current))
    settings_form.set_choices("holiday_calendar", calendars)


def _form_context(
    request: HttpRequest,
    *,
    form: ScheduleForm,
    section: str,
    params: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """A settings form (Schedule or Replies & persona) and its live preview."""
    user = user_of(request)
    saved = web_selectors.saved_schedule(user)
    status = page.now_context(user, timezone.now())
    query = request.GET if params is None else params
    preview = page.preview(saved.config, form, at=status["as_of"], params=query)
    form.with_spare_rows()
    if form.errors:
        form.flag_rows(preview.candidate.row_problems)
    _with_choices(form)
    if section == "replies":
        extra.setdefault("exempt_picks", _exempt_picks(user, form, status["timezone"]))
    return base_context(
        request,
        section,
        **status,
        form=form,
        errors=form.errors,
        error_list=_labelled(form.errors),
        preview=preview,
        live_errors=form.errors,
        curves=["linear", "step", "ease_in"],
        presets={
            code: {"persona": persona, "tiers": "\n".join(tiers)}
            for code, (persona, tiers) in schedule_config.PERSONA_PRESETS.items()
        },
        reply_presets=_reply_presets(),
        state_order=words.STATE_ORDER,
        state_names=words.STATE_NAMES,
        state_hints=words.STATE_HINTS,
        hours=range(25),
        **extra,
    )


def _exempt_picks(user: Any, form: ScheduleForm, tz_name: str) -> dict[str, Any]:
    """The exemption pickers for the config the form shows; an unbound
    form's typing boxes then hold only what no box offers. Inside a team,
    what the team voids is marked so (issue 39)."""
    settings_form = form.settings
    source = settings_form.data if settings_form.is_bound else settings_form.initial
    current = {
        setting: settings_form.typed(setting, source.get(setting))
        for setting, _pick, _seen in exempt_picker.PICKERS.values()
    }
    team = bundle_for(user.pk).team
    offered = exempt_picker.picks(
        user_id=user.pk,
        now=timezone.now(),
        current=current,
        tz=zoneinfo.ZoneInfo(tz_name),
        team=team,
    )
    spared = not settings_form.typed("apply_to_subagents", source.get("apply_to_subagents"))
    if not settings_form.is_bound:
        for setting, shown in exempt_picker.typed_only(current, offered).items():
            settings_form.initial[setting] = shown
            # A bound field read before (the preview reads every value)
            # keeps the initial it saw: let it be made again.
            settings_form._bound_fields_cache.pop(setting, None)  # type: ignore[attr-defined]
    return {**offered, "subagents_void": exempt_picker.subagents_void(team, spared)}


def _render_section(
    request: HttpRequest, section: str, *, form: ScheduleForm, status: int = 200, **extra: Any
) -> HttpResponse:
    context = _form_context(request, form=form, section=section, **extra)
    if status == 200 and context["preview"].band_error:
        # A bad band date is flagged on the page, and the answer says it was
        # bad input like any other door.
        status = 400
    template = SECTION_TEMPLATES[section]
    if is_htmx(request) and request.method == "POST":
        # Saved or refused in place: the form alone, no reload, no jump.
        template = f"{template}#section-form"
        status = HTMX_INVALID if status == 400 else status
    return no_store(render(request, template, context, status=status))


def _saved_form(request: HttpRequest, keys: frozenset[str] | None = None) -> ScheduleForm:
    saved = web_selectors.saved_schedule(user_of(request))
    form = schedule_form.form_from_config(saved.config, saved.version)
    form.keys = keys
    return form


@login_required_page
@require_GET
def settings_page(request: HttpRequest) -> HttpResponse:
    """The first screen: what your AI does now and next, in words."""
    context = _overview_context(request)
    # A bad band date or moment is flagged on the page (drawn for today, now),
    # and the answer says it was bad input like any other door.
    # (422 to htmx, the scrubber's requests: see HTMX_INVALID.)
    status = 200
    if context["band_error"] or context["look"].error:
        status = HTMX_INVALID if is_htmx(request) else 400
    return no_store(render(request, OVERVIEW, context, status=status))


def _overview_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    user = user_of(request)
    now = timezone.now()
    status = page.now_context(user, now)
    look = page.look_at(request.GET, tz_name=status["timezone"], now=now)
    if look.at is not None:
        # A preview on this page only: nothing is written, no gateway is told.
        status = page.now_context(user, now, at=look.at)
    day = page.parse_band(request.GET, status["as_of_local"].date())
    return base_context(
        request,
        "overview",
        **status,
        look=look,
        band=page.band_for(status["bundle"], status["as_of"], day=day[0], view=day[1]),
        band_date=day[0],
        band_view=day[1],
        # The scrubber sits on the shown moment, to the quarter hour.
        scrub_minute=(status["as_of_local"].hour * 60 + status["as_of_local"].minute) // 15 * 15,
        band_error=day[2],
        state_order=words.STATE_ORDER,
        state_names=words.STATE_NAMES,
        state_hints=words.STATE_HINTS,
        hours=range(25),
        **extra,
    )


def _section_page(section: str) -> View:
    keys = FORM_KEYS[section]

    @login_required_page
    @require_http_methods(["GET", "POST"])
    def view(request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            return _save(request, section, keys)
        return _render_section(request, section, form=_saved_form(request, keys))

    view.__name__ = f"{section}_section"
    view.__doc__ = f"The {section} section: its form (GET) and its own save (POST)."
    return view


def _reply_presets() -> dict[str, dict[str, str]]:
    """The reply pairs one click away: informative ones in the page's language,
    and the seed's terse pair for those who liked it."""
    return {"informative": informative_replies(), "terse": dict(schedule_config.TERSE_REPLIES)}


def _save(request: HttpRequest, section: str, keys: frozenset[str]) -> HttpResponse:
    user = user_of(request)
    # The exemption pickers' ticks become their settings' lines first.
    post = exempt_picker.merged(request.POST) if section == "replies" else request.POST
    form = schedule_form.form_from_post(post, keys)
    reply_preset = request.POST.get("reply_preset")
    if reply_preset is not None:
        # Without script the reply buttons land here: fill in, do not save.
        replies = _reply_presets().get(reply_preset)
        if replies is None:
            raise Http404("no such preset")
        data = post.copy()
        data.update(replies)
        return _render_section(
            request,
            section,
            form=schedule_form.form_from_post(data, keys),
            notice=_("Preset filled in. Nothing is saved until you press Save."),
        )
    preset = request.POST.get("persona_preset")
    if preset is not None:
        # Without script the preset buttons land here: fill in, do not save.
        if preset not in schedule_config.PERSONA_PRESETS:
            raise Http404("no such preset")
        persona, tiers = schedule_config.PERSONA_PRESETS[preset]
        data = post.copy()
        data["tired_persona"], data["tier_texts"] = persona, "\n".join(tiers)
        form = schedule_form.form_from_post(data, keys)
        return _render_section(
            request,
            section,
            form=form,
            notice=_("Preset filled in. Nothing is saved until you press Save."),
        )
    changes = schedule_form.changes_from_form(form)
    try:
        row = _update(user, changes, form.version, keys)
    except schedule_config.ConfigError as exc:
        form.flag(words.localized_errors(exc.errors))
        return _render_section(request, section, form=form, status=400)
    except StaleVersion as exc:
        changed = web_selectors.fields_changed_since(user, exc.expected) or []
        # Keep what they typed; the next Save is a deliberate overwrite of
        # the version they have now been shown.
        form.version = exc.current
        return _render_section(
            request,
            section,
            form=form,
            status=409,
            stale={"changed": [str(FIELD_LABELS.get(key, key)) for key in changed]},
        )
    saved = row.version != form.version
    text = _("Saved.") if saved else _("Nothing changed, so nothing was saved.")
    if is_htmx(request):
        return _render_section(
            request, section, form=_saved_form(request, keys), toast=text, saved=saved
        )
    if saved:
        messages.success(request, text)
    else:
        messages.info(request, text)
    return HttpResponseRedirect(reverse(f"settings-{section}"))


def _update(user: Any, changes: dict[str, Any], version: int, keys: frozenset[str]) -> Any:
    """Save one section. A save elsewhere meanwhile (another section, the
    API) is no conflict unless it changed one of this section's settings:
    then the person decides, with both versions named."""
    try:
        return schedule_update(
            user=user,
            changes=changes,
            expected_version=version,
            source="form",
            actor=user,
            channel="page",
        )
    except StaleVersion as exc:
        changed = web_selectors.fields_changed_since(user, exc.expected)
        # A version not on record (none posted, or a made-up one) says nothing
        # about what changed since: a conflict, never a silent overwrite.
        if changed is None or set(changed) & keys:
            raise
        return schedule_update(
            user=user,
            changes=changes,
            expected_version=exc.current,
            source="form",
            actor=user,
            channel="page",
        )


schedule_section = _section_page("schedule")
replies_section = _section_page("replies")


@login_required_page
@require_POST
def schedule_preview(request: HttpRequest) -> HttpResponse:
    """The chart, band and live field errors for the form as typed (unsaved)."""
    user = user_of(request)
    form = schedule_form.form_from_post(request.POST, SCHEDULE_KEYS)
    saved = web_selectors.saved_schedule(user)
    status = page.now_context(user, timezone.now())
    preview = page.preview(saved.config, form, at=status["as_of"], params=request.POST)
    context = page.preview_context(preview, form, SCHEDULE_KEYS)
    return no_store(render(request, f"{SECTION_TEMPLATES['schedule']}#preview-response", context))


def _status_response(request: HttpRequest, error: str = "", status: int = 200) -> HttpResponse:
    context = _overview_context(request, override_error=error)
    return no_store(render(request, f"{OVERVIEW}#status", context, status=status))


@login_required_page
@require_POST
def override(request: HttpRequest) -> HttpResponse:
    user = user_of(request)
    words_typed = override_commands.words_from_form(request.POST)
    try:
        command = override_commands.from_words(words_typed)
        override_apply(user=user, command=command, now=timezone.now(), actor=user, channel="page")
    except OverrideError as exc:
        if is_htmx(request):
            return _status_response(request, words.override_error(exc), status=HTMX_INVALID)
        context = _overview_context(request, override_error=words.override_error(exc))
        return no_store(render(request, OVERVIEW, context, status=400))
    if is_htmx(request):
        if command.verb in ("debug", "debug-clear", "auto"):
            # The time machine moves the whole page (band, chart, preview).
            return HttpResponseClientRefresh()
        return _status_response(request)
    return HttpResponseRedirect(reverse("settings-page"))
