"""Pages for people: sign-in and sign-out, and the settings site's sections."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from curfew_core.web import account, signin, views

urlpatterns: list[URLPattern | URLResolver] = [
    path(
        "login/",
        signin.LoginView.as_view(
            template_name="curfew/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", views.settings_page, name="settings-page"),
    path("schedule/", views.schedule_section, name="settings-schedule"),
    path("schedule/preview/", views.schedule_preview, name="settings-preview"),
    path("replies/", views.replies_section, name="settings-replies"),
    path("integrations/", views.integrations, name="settings-integrations"),
    path("activity/", include("curfew_core.web.activity.urls")),
    path("overrides/", views.override, name="settings-override"),
    path("tokens/", views.token_new, name="settings-token-create"),
    path("tokens/<int:token_id>/revoke/", views.token_remove, name="settings-token-revoke"),
    path("decision/", views.decision, name="settings-decision"),
]
# The Team page (curfew_core/web/team.py).
urlpatterns += [path("team/", include("curfew_core.web.team_urls"))]
# The Account section (curfew_core/web/account.py).
urlpatterns += [
    path("account/", account.account_page, name="account"),
    path("account/password/", account.password_change, name="account-password"),
    path("account/sessions/", account.sessions_end, name="account-sessions"),
    path("account/language/", account.language_save, name="account-language"),
    path("account/timezone/", account.timezone_save, name="account-timezone"),
    path("account/signup/", account.signup, name="account-signup"),
    path("account/reset/", account.reset, name="account-reset"),
    path("account/reset/done/", account.reset_done, name="account-reset-done"),
    path("account/reset/<uidb64>/<token>/", account.reset_confirm, name="account-reset-confirm"),
    path("account/reset/complete/", account.reset_complete, name="account-reset-complete"),
]
