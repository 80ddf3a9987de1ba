"""The Integrations section's doors (``web.integrations.views``): the page,
its access keys and its decision preview, mounted at the site's root."""

from django.urls import URLPattern, path

from curfew_core.web.integrations import views

urlpatterns: list[URLPattern] = [
    path("integrations/", views.integrations, name="settings-integrations"),
    path("tokens/", views.token_new, name="settings-token-create"),
    path("tokens/<int:token_id>/revoke/", views.token_remove, name="settings-token-revoke"),
    path("decision/", views.decision, name="settings-decision"),
]
