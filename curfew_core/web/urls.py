"""Pages for people: sign-in and sign-out, and the settings site's sections."""

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from curfew_core.web import signin

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
    path("", include("curfew_core.web.schedule.urls")),
    path("", include("curfew_core.web.replies.urls")),
    path("", include("curfew_core.web.integrations.urls")),
    path("activity/", include("curfew_core.web.activity.urls")),
    path("team/", include("curfew_core.web.team.urls")),
    path("account/", include("curfew_core.web.account.urls")),
]
