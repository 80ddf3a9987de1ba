"""The settings page's sign-in, behind the throttle (the form, shared with the
admin, is ``curfew_core.signin_forms``): a refusal is a 429 with Retry-After."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpResponse

from curfew_core.signin_forms import ThrottledSignIn


class LoginView(auth_views.LoginView):
    authentication_form = ThrottledSignIn

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        refusal = getattr(form, "refusal", None)
        if refusal is not None:
            response.status_code = 429
            response["Retry-After"] = str(refusal.retry_after)
        return response
