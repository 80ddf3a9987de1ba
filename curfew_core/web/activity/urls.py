"""``/activity/…``: the Activity section's doors (``web.activity.views``)."""

from django.urls import URLPattern, path

from curfew_core.web.activity import views

urlpatterns: list[URLPattern] = [
    path("", views.activity, name="settings-activity"),
    path("decisions.csv", views.activity_export, name="settings-activity-export"),
    path("prices/", views.activity_prices, name="settings-activity-prices"),
]
