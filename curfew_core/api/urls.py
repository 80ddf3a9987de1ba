from django.urls import path, re_path

from curfew_core.api import ledger_views, team_views, views

urlpatterns = [
    path("schedule", views.schedule, name="api-schedule"),
    path("overrides", views.overrides, name="api-overrides"),
    path("openapi.json", views.openapi, name="api-openapi"),
    path("team/schedule", team_views.schedule, name="api-team-schedule"),
    path("team/members", team_views.members, name="api-team-members"),
    path("team/overtime", team_views.overtime, name="api-team-overtime"),
    path("decisions", ledger_views.decisions, name="api-decisions"),
    path("savings", ledger_views.savings, name="api-savings"),
    # Anything else under the API answers in the API's own JSON error shape.
    re_path(r"^.*$", views.not_found, name="api-not-found"),
]
