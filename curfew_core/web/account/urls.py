"""``/account/…``: the Account section's doors (``web.account.views``)."""

from django.urls import URLPattern, path

from curfew_core.web.account import views as account

urlpatterns: list[URLPattern] = [
    path("", account.account_page, name="account"),
    path("password/", account.password_change, name="account-password"),
    path("sessions/", account.sessions_end, name="account-sessions"),
    path("language/", account.language_save, name="account-language"),
    path("timezone/", account.timezone_save, name="account-timezone"),
    path("signup/", account.signup, name="account-signup"),
    path("reset/", account.reset, name="account-reset"),
    path("reset/done/", account.reset_done, name="account-reset-done"),
    path("reset/<uidb64>/<token>/", account.reset_confirm, name="account-reset-confirm"),
    path("reset/complete/", account.reset_complete, name="account-reset-complete"),
]
