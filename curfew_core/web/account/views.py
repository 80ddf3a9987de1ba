"""The Account section (``/account/``): password, other sessions, language and
timezone, each its own form and save; sign-up and password reset by email where
the operator turned them on.

Without script every form is a plain POST that redirects back with a message
(or re-renders the page with the field flagged, 400). With htmx the password,
sessions and timezone cards swap in place (bad input: 422, see ``HTMX_INVALID``
in ``web.shell``); the language form reloads the page, which is what a new
language needs.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse, reverse_lazy
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curfew_core import throttle
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.declaration import labels_of
from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.account import preferred_language, session_keys_of
from curfew_core.services.account import language_set, sessions_end_others
from curfew_core.services.schedules import StaleVersion, schedule_update
from curfew_core.web import words
from curfew_core.web.account.forms import (
    ChangePassword,
    LanguageForm,
    ResetPassword,
    ResetRequest,
    SignUp,
    TimezoneForm,
)
from curfew_core.web.schedule import choices
from curfew_core.web.sections import sections_for
from curfew_core.web.shell import (
    HTMX_INVALID,
    access_of,
    is_htmx,
    login_required_page,
    no_store,
    rendered,
)

TEMPLATE = "curfew/account.html"
TIMEZONE_LABEL = gettext_lazy(labels_of()["timezone"])


def set_language_cookie(response: HttpResponse, language: str) -> None:
    """Remember ``language`` in the browser as Django's own switch does
    (``LocaleMiddleware`` reads it); ``""`` forgets it (the browser's own)."""
    if not language:
        response.delete_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            path=settings.LANGUAGE_COOKIE_PATH,
            domain=settings.LANGUAGE_COOKIE_DOMAIN,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
        return
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def apply_preferred_language(request: HttpRequest, response: HttpResponse) -> None:
    """On sign-in: the person's stored language, if they chose one."""
    user: Any = request.user
    if not user.is_authenticated:
        return
    language = preferred_language(user)
    if language:
        set_language_cookie(response, language)


def _timezone_form(request: HttpRequest, data: Any = None) -> TimezoneForm:
    saved = web_selectors.saved_schedule(_user(request))
    initial = {"timezone": saved.config.get("timezone"), "version": saved.version}
    form = TimezoneForm(data, initial=initial)
    form.fields["timezone"].label = TIMEZONE_LABEL
    return form


def _timezone_choices(current: str) -> list[Any]:
    groups: list[Any] = list(choices.timezone_groups())
    if current and current not in choices.timezone_offered():
        # A zone the picker leaves out (``US/Eastern``) stays selectable as
        # it is; what was typed (and refused) stays visible next to its error.
        real = current in zoneinfo.available_timezones()
        groups.insert(0, (_("Your zone") if real else _("Not a known zone"), [(current, current)]))
    return groups


def _user(request: HttpRequest) -> Any:
    return request.user


def _context(request: HttpRequest, **forms: Any) -> dict[str, Any]:
    user = _user(request)
    timezone_form = forms.pop("timezone_form", None) or _timezone_form(request)
    current_zone = str(timezone_form["timezone"].value() or "")
    return {
        "password_form": forms.pop("password_form", None) or ChangePassword(user),
        "language_form": forms.pop("language_form", None)
        or LanguageForm(initial={"language": preferred_language(user)}),
        "timezone_form": timezone_form,
        "timezone_choices": _timezone_choices(current_zone),
        "current_zone": current_zone,
        "other_sessions": max(0, len(session_keys_of(user)) - 1),
        "section": "account",
        "sections": sections_for(access_of(user)),
        **forms,
    }


def _page(request: HttpRequest, status: int = 200, **forms: Any) -> HttpResponse:
    return rendered(request, TEMPLATE, _context(request, **forms), status=status)


def _card(request: HttpRequest, card: str, status: int = 200, **forms: Any) -> HttpResponse:
    """One card of the page (for htmx), with ``notice`` shown inside it."""
    context = _context(request, **forms)
    return rendered(request, f"{TEMPLATE}#{card}", context, status=status)


def _answer(
    request: HttpRequest, card: str, *, error: bool, notice: str = "", **forms: Any
) -> HttpResponse:
    """Bad input: the page (400) or the card (422) with the field flagged.
    Saved: back to the page with the message, or the card with it inside."""
    if is_htmx(request):
        return _card(request, card, status=HTMX_INVALID if error else 200, notice=notice, **forms)
    if error:
        return _page(request, status=400, **forms)
    messages.success(request, notice)
    return HttpResponseRedirect(reverse("account"))


@login_required_page
@require_GET
def account_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


@login_required_page
@require_POST
def password_change(request: HttpRequest) -> HttpResponse:
    form = ChangePassword(_user(request), request.POST, address=throttle.client_address(request))
    if not form.is_valid():
        response = _answer(request, "password", error=True, password_form=form)
        if form.refusal is not None:
            # Locked out, as the sign-in page would say: when to come back.
            response.status_code = 429
            response["Retry-After"] = str(form.refusal.retry_after)
        return response
    user = form.save()
    # This browser stays signed in (a new session key, the new hash); every
    # other session of the person ends with the old password.
    update_session_auth_hash(request, user)
    return _answer(
        request,
        "password",
        error=False,
        notice=_("Password changed. Your other sessions are signed out."),
    )


@login_required_page
@require_POST
def sessions_end(request: HttpRequest) -> HttpResponse:
    count = sessions_end_others(
        user=_user(request), keep=request.session.session_key, actor=_user(request), channel="page"
    )
    if count:
        notice = translation.ngettext(
            "Signed out %(n)s other session.", "Signed out %(n)s other sessions.", count
        ) % {"n": count}
    else:
        notice = _("There were no other sessions to sign out.")
    return _answer(request, "sessions", error=False, notice=notice)


@login_required_page
@require_POST
def language_save(request: HttpRequest) -> HttpResponse:
    form = LanguageForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400, language_form=form)
    language = form.cleaned_data["language"]
    language_set(user=_user(request), language=language, actor=_user(request), channel="page")
    # Shown at once: this answer's message and the next page in the new language.
    translation.activate(language or translation.get_language_from_request(request))
    messages.success(request, _("Language saved."))
    response = HttpResponseRedirect(reverse("account"))
    set_language_cookie(response, language)
    return response


@login_required_page
@require_POST
def timezone_save(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    form = _timezone_form(request, request.POST)
    if not form.is_valid():
        return _answer(request, "timezone", error=True, timezone_form=form)
    zone = form.cleaned_data["timezone"].strip()
    try:
        schedule_update(
            user=user,
            changes={"timezone": zone},
            expected_version=form.cleaned_data["version"],
            source="form",
            actor=user,
            channel="page",
        )
    except schedule_config.ConfigError as exc:
        for key, message in words.localized_errors(exc.errors).items():
            form.add_error("timezone" if key == "timezone" else None, message)
        return _answer(request, "timezone", error=True, timezone_form=form)
    except StaleVersion:
        # Someone saved the schedule meanwhile: show the saved zone, change nothing.
        stale = _(
            "The schedule was changed elsewhere since this page was loaded. "
            "The timezone shown is the saved one; choose again and save."
        )
        fresh = _timezone_form(request)
        if is_htmx(request):
            return _card(request, "timezone", status=409, timezone_form=fresh, stale=stale)
        return _page(request, status=409, timezone_form=fresh, stale=stale)
    return _answer(
        request,
        "timezone",
        error=False,
        notice=_("Timezone saved: your schedule's times are now in %(zone)s.")
        % {"zone": f"{choices.zone_label(zone)} ({zone})"},
    )


# -- sign-up and password reset, each only where the operator turned it on ---------


AnyView = TypeVar("AnyView", bound=Callable[..., HttpResponseBase])


def _only_if(setting: str) -> Callable[[AnyView], AnyView]:
    """The view where ``settings.<setting>`` is on; a 404 where it is off."""

    def decorate(view: AnyView) -> AnyView:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not getattr(settings, setting, False):
                raise Http404(f"{setting} is off")
            return view(request, *args, **kwargs)

        return cast(AnyView, wrapper)

    return decorate


@_only_if("CURFEW_SIGNUP")
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return HttpResponseRedirect(reverse("settings-page"))
    if request.method == "POST":
        # Counted before the form is checked: a refused attempt is not told
        # whether its name is taken (see throttle.note_signup_attempt).
        refusal = throttle.note_signup_attempt(throttle.client_address(request))
        if refusal is not None:
            typed = {"username": str(request.POST.get("username", ""))[:150]}
            context = {"form": SignUp(initial=typed), "refusal": refusal.message}
            response = render(request, "curfew/signup.html", context, status=429)
            response["Retry-After"] = str(refusal.retry_after)
            return no_store(response)
    form = SignUp(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome! Your account is ready."))
        return HttpResponseRedirect(reverse("settings-page"))
    status = 400 if form.is_bound else 200
    return rendered(request, "curfew/signup.html", {"form": form}, status=status)


RESET_DONE = reverse_lazy("account-reset-done")


RESET_FORM = "curfew/reset/form.html"


class _ThrottledReset(auth_views.PasswordResetView):
    """Django's reset request behind the reset throttle (per client address
    and per address typed): a refusal is the same page, 429, Retry-After,
    and no mail."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        email = str(request.POST.get("email", ""))[:254]
        refusal = throttle.note_reset_request(throttle.client_address(request), email)
        if refusal is None:
            return super().post(request, *args, **kwargs)
        context = self.get_context_data(form=self.form_class(initial={"email": email}))
        context["refusal"] = refusal.message
        response = render(request, RESET_FORM, context, status=429)
        response["Retry-After"] = str(refusal.retry_after)
        return no_store(response)


reset = _only_if("CURFEW_PASSWORD_RESET")(
    _ThrottledReset.as_view(
        form_class=ResetRequest,  # its mail leaves after the answer (timing)
        template_name=RESET_FORM,
        email_template_name="curfew/reset/email.txt",
        subject_template_name="curfew/reset/subject.txt",
        success_url=RESET_DONE,
    )
)
reset_done = _only_if("CURFEW_PASSWORD_RESET")(
    auth_views.PasswordResetDoneView.as_view(template_name="curfew/reset/done.html")
)
reset_confirm = _only_if("CURFEW_PASSWORD_RESET")(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="curfew/reset/confirm.html",
        form_class=ResetPassword,
        success_url=reverse_lazy("account-reset-complete"),
    )
)
reset_complete = _only_if("CURFEW_PASSWORD_RESET")(
    auth_views.PasswordResetCompleteView.as_view(template_name="curfew/reset/complete.html")
)
