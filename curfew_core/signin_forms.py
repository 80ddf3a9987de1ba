"""Sign-in behind the throttle, for the settings page and the admin alike.

The throttle is asked before the password is checked: during a lock-out the
right password is refused too, with the reason and when to come back. Only a
wrong password (or an unknown name) counts; a refused attempt does not, so a
lock-out ends one window after the last counted failure.

Outside the doors: the page's sign-in (``web.signin``) and the admin's
(``admin``) both use these forms, and neither imports the other.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpResponse

from curfew_core import throttle


class ThrottledSignIn(AuthenticationForm):
    refusal: throttle.Refusal | None = None

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = throttle.client_address(self.request) if self.request else "unknown"
        # A throttle that cannot be asked (Redis down) raises: a security check
        # that cannot run refuses rather than waves through, and the outage
        # middleware answers with the styled 503 page and Retry-After.
        self.refusal = throttle.signin_refusal(username, address)
        if self.refusal is not None:
            raise ValidationError(self.refusal.message, code="throttled")
        try:
            return super().clean()
        except ValidationError as exc:
            if exc.code == "invalid_login":
                # Not suppressed: a failure that cannot be counted (Redis gone,
                # or too slow to answer under load) raises into the outage
                # answer, the styled 503 with Retry-After. Swallowing it lost
                # counts silently (issue 22: a parallel run's missing count),
                # so a guesser who can slow Redis would never be locked out.
                throttle.note_signin_failure(username, address)
            raise


class ThrottledAdminSignIn(ThrottledSignIn, AdminAuthenticationForm):
    """The admin's form (staff only) behind the same throttle."""


def refused(response: HttpResponse, form: object) -> HttpResponse:
    """A sign-in page's answer to a throttled form: 429 with Retry-After (the
    page itself, with the reason in its banner), whichever form it was."""
    refusal = getattr(form, "refusal", None)
    if isinstance(refusal, throttle.Refusal):
        response.status_code = 429
        response["Retry-After"] = str(refusal.retry_after)
    return response
