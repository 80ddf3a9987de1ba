"""The settings page's sign-in, behind the throttle (the form, shared with the
admin, is ``curfew_core.signin_forms``): a refusal is a 429 with Retry-After,
on this page and on the admin's."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from curfew_core.services.schedules import schedule_start_on_sign_in
from curfew_core.signin_forms import ThrottledSignIn, refused
from curfew_core.web.account.views import apply_preferred_language


class LoginView(auth_views.LoginView):
    authentication_form = ThrottledSignIn

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        # Offered only where the operator turned them on (off: the routes are 404s).
        context["signup_on"] = settings.CURFEW_SIGNUP
        context["reset_on"] = settings.CURFEW_PASSWORD_RESET
        return context

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        # The person's own language from now on, whichever browser they sign in with.
        apply_preferred_language(self.request, response)
        # No schedule yet: one whose replies and persona speak their language.
        schedule_start_on_sign_in(user=form.get_user())
        return response

    def form_invalid(self, form: Any) -> HttpResponse:
        return refused(super().form_invalid(form), form)


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's own sign-in (``admin.site.login``, with the throttled form
    ``curfew_core.admin`` gives it), answering a lock-out as this page does:
    429 with Retry-After, not a 200 that only says so (issue 41, finding 6)."""
    response = admin.site.login(request)
    context = getattr(response, "context_data", None) or {}
    return refused(response, context.get("form"))
