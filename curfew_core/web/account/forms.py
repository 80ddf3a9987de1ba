"""The Account section's forms: Django's own password forms, saving through
the account service (so each change is audited), and the preference pickers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import (
    PasswordChangeForm,
    PasswordResetForm,
    SetPasswordForm,
    UserCreationForm,
)
from django.contrib.auth.models import User
from django.contrib.sites.shortcuts import get_current_site
from django.core.exceptions import ValidationError
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from curfew_core import throttle
from curfew_core.services.account import password_set
from curfew_core.services.users import user_sign_up
from curfew_core.web import outbox

CHANNEL = "page"

if TYPE_CHECKING:  # generic in the stubs only (django_stubs_ext does not patch it)
    _SetPassword = SetPasswordForm[User]
else:
    _SetPassword = SetPasswordForm


class _AuditedSave(_SetPassword):
    """A new password saved through the account service, so it is audited."""

    def save(self, commit: bool = True) -> Any:
        return password_set(
            user=self.user,
            password=self.cleaned_data["new_password1"],
            actor=self.user,
            channel=CHANNEL,
        )


class ChangePassword(_AuditedSave, PasswordChangeForm):
    """Django's password change (old password, new twice, the validators).

    A wrong current password is a failed sign-in: it counts against the
    account and the address, and a lock-out refuses the right one too, so a
    session left open cannot be used to guess the password.
    """

    refusal: throttle.Refusal | None = None

    def __init__(self, *args: Any, address: str = "unknown", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = address
        # One card of several: the page must not jump to it (or open a phone's keyboard).
        self.fields["old_password"].widget.attrs.pop("autofocus", None)

    def clean_old_password(self) -> str:
        username = self.user.get_username()
        self.refusal = throttle.signin_refusal(username, self.address)
        if self.refusal is not None:
            raise ValidationError(self.refusal.message, code="throttled")
        try:
            old: str = super().clean_old_password()
        except ValidationError:
            throttle.note_signin_failure(username, self.address)
            raise
        return old


class ResetRequest(PasswordResetForm):
    """Django's reset request, with its mail sent off the request path.

    The address is looked up here (one query, whatever the address); the
    link's token, the mail's text and the send, which only a known address
    needs, happen on the outbox's thread after the answer, so the answer takes
    the same time for an address with an account and one without.
    """

    _users: list[Any] | None = None

    def get_users(self, email: str) -> Any:
        if self._users is not None:
            return iter(self._users)
        return super().get_users(email)

    def save(self, **kwargs: Any) -> None:  # type: ignore[override]
        users = list(super().get_users(self.cleaned_data["email"]))
        request = kwargs.pop("request", None)
        if not kwargs.get("domain_override"):
            # Read from the request now: the send runs after it is answered.
            kwargs["domain_override"] = get_current_site(request).domain
        language = translation.get_language()

        def send() -> None:
            self._users = users
            with translation.override(language):
                super(ResetRequest, self).save(**kwargs)

        outbox.send_later(send, "password reset mail")


class ResetPassword(_AuditedSave):
    """The new password behind a reset link (the link proved who it is)."""


class SignUp(UserCreationForm[User]):
    """A name and a password twice, checked by Django's validators."""

    def save(self, commit: bool = True) -> User:
        return user_sign_up(
            username=self.cleaned_data["username"], password=self.cleaned_data["password1"]
        )


class LanguageForm(forms.Form):
    language = forms.ChoiceField(label=_("Language"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field: Any = self.fields["language"]
        field.choices = [("", _("The browser's language")), *settings.LANGUAGES]
        field.required = False


class TimezoneForm(forms.Form):
    """The schedule's ``timezone`` setting and the version it was read at (the
    schedule service validates the zone and refuses a stale version)."""

    timezone = forms.CharField(label=_("Timezone"), max_length=200)
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
