"""The Replies & voice section's door (``web.replies.views``), mounted at the
site's root."""

from django.urls import URLPattern, path

from curfew_core.web.replies import views

urlpatterns: list[URLPattern] = [
    path("replies/", views.replies_section, name="settings-replies"),
]
