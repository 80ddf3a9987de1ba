"""``/embed/…``: the capsule's HTTP side (mounted in ``curfew_site.urls``)."""

from django.urls import path

from curfew_core.realtime import views

urlpatterns = [
    path("", views.manage, name="capsule-manage"),
    path("capsule/", views.embed_page, name="capsule-embed"),
    path("state", views.state, name="capsule-state"),
    path("tokens/", views.create_token, name="capsule-token-create"),
    path("tokens/<int:token_id>/revoke", views.revoke_token, name="capsule-token-revoke"),
]
