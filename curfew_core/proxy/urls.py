"""The OpenAI-compatible proxy, mounted at ``/v1/``: point an SDK's base URL here."""

from django.urls import URLPattern, URLResolver, path

from curfew_core.proxy import views

app_name = "proxy"

urlpatterns: list[URLPattern | URLResolver] = [
    path("chat/completions", views.chat_completions, name="chat-completions"),
    path("models", views.models, name="models"),
    path("models/<path:model>", views.models, name="model"),
    path("<path:rest>", views.not_proxied, name="not-proxied"),
]
