"""``/team/…``: the Team page's doors (``web.team.views``), mounted in ``web.urls``."""

from django.urls import URLPattern, path

from curfew_core.web.team import views as team

urlpatterns: list[URLPattern] = [
    path("", team.team_page, name="team"),
    path("schedule/", team.team_schedule, name="team-schedule"),
    path("schedule/preview/", team.team_schedule_preview, name="team-schedule-preview"),
    path("rules/", team.policy_save, name="team-rules"),
    path("overtime/", team.overtime, name="team-overtime"),
    path("invite/", team.invite, name="team-invite"),
    path("invite/link/", team.invite_link, name="team-invite-link"),
    path("invite/<int:invite_id>/revoke/", team.invite_revoke, name="team-invite-revoke"),
    path("members/<int:user_id>/role/", team.role_set, name="team-role"),
    path("members/<int:user_id>/remove/", team.member_remove, name="team-remove"),
    path("leave/", team.leave, name="team-leave"),
    path("join/<str:raw>/", team.join, name="team-join"),
]
