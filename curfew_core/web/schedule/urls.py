"""The Overview's and the Schedule section's doors (``web.schedule.views``),
mounted at the site's root."""

from django.urls import URLPattern, path

from curfew_core.web.schedule import views

urlpatterns: list[URLPattern] = [
    path("", views.settings_page, name="settings-page"),
    path("schedule/", views.schedule_section, name="settings-schedule"),
    path("schedule/preview/", views.schedule_preview, name="settings-preview"),
    path("overrides/", views.override, name="settings-override"),
]
