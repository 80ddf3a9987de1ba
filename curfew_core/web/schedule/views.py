"""The Overview and the Schedule section's doors: what your AI does now and
next, in words (with a page-only preview of another moment), the Schedule
form and its live preview, and the override buttons."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from curfew_core.engine import OverrideError
from curfew_core.schedules import override_commands
from curfew_core.selectors import web as web_selectors
from curfew_core.services.overrides import override_apply
from curfew_core.web import words
from curfew_core.web.schedule import contexts, schedule_form, team_line
from curfew_core.web.schedule.keys import SCHEDULE_KEYS
from curfew_core.web.schedule.section import SECTION_TEMPLATES, FormSection, section_page
from curfew_core.web.shell import (
    HTMX_INVALID,
    base_context,
    invalid_status,
    is_htmx,
    login_required_page,
    rendered,
    user_of,
)

OVERVIEW = "curfew/overview.html"


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
        status = invalid_status(request)
    return rendered(request, OVERVIEW, context, status=status)


def _overview_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    user = user_of(request)
    now = timezone.now()
    status = contexts.now_context(user, now)
    look = contexts.look_at(request.GET, tz_name=status["timezone"], now=now)
    if look.at is not None:
        # A preview on this page only: nothing is written, no gateway is told.
        status = contexts.now_context(user, now, at=look.at)
    day = contexts.parse_band(request.GET, status["as_of_local"].date())
    return base_context(
        request,
        "overview",
        line=team_line.line,
        **status,
        look=look,
        band=contexts.band_for(status["bundle"], status["as_of"], day=day[0], view=day[1]),
        band_date=day[0],
        band_view=day[1],
        # The scrubber sits on the shown moment, to the quarter hour.
        scrub_minute=(status["as_of_local"].hour * 60 + status["as_of_local"].minute) // 15 * 15,
        band_error=day[2],
        **words.band_words(),
        hours=range(25),
        **extra,
    )


schedule_section = section_page(FormSection("schedule", team_line=True))


@login_required_page
@require_POST
def schedule_preview(request: HttpRequest) -> HttpResponse:
    """The chart, band and live field errors for the form as typed (unsaved)."""
    user = user_of(request)
    form = schedule_form.form_from_post(request.POST, SCHEDULE_KEYS)
    saved = web_selectors.saved_schedule(user)
    status = contexts.now_context(user, timezone.now())
    preview = contexts.preview(
        saved.config, form, at=status["as_of"], params=request.POST, team=status["bundle"].team
    )
    context = contexts.preview_context(preview, form, SCHEDULE_KEYS)
    return rendered(request, f"{SECTION_TEMPLATES['schedule']}#preview-response", context)


def _status_response(request: HttpRequest, error: str = "", status: int = 200) -> HttpResponse:
    context = _overview_context(request, override_error=error)
    return rendered(request, f"{OVERVIEW}#status", context, status=status)


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
        return rendered(request, OVERVIEW, context, status=400)
    if is_htmx(request):
        if command.verb in ("debug", "debug-clear", "auto"):
            # The time machine moves the whole page (band, chart, preview).
            return HttpResponseClientRefresh()
        return _status_response(request)
    return HttpResponseRedirect(reverse("settings-page"))
