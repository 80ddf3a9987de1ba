"""The proxy, mounted at ``/v1/``: OpenAI-compatible doors, and Anthropic's
``/v1/messages`` (point an SDK's base URL here)."""

from django.urls import URLPattern, URLResolver, path, re_path

from curfew_core.proxy import chat, messages, passthrough, responses, views

app_name = "proxy"

# ``[\s\S]`` and not ``path:`` (``.+``): a decoded ``%0a`` must still reach a
# proxy view and be refused in OpenAI's shape, never fall through to an HTML 404.
urlpatterns: list[URLPattern | URLResolver] = [
    path("chat/completions", chat.chat_completions, name="chat-completions"),
    path("messages", messages.messages, name="messages"),
    path("messages/count_tokens", messages.count_tokens, name="count-tokens"),
    path("models", chat.models, name="models"),
    re_path(r"^models/(?P<model>[\s\S]+)\Z", chat.models, name="model"),
    path("responses", responses.create_response, name="responses"),
    re_path(
        r"^responses/(?P<response_id>[^/]+)\Z", responses.stored_response, name="stored-response"
    ),
    path("embeddings", passthrough.embeddings, name="embeddings"),
    path("completions", passthrough.completions, name="completions"),
    re_path(r"^(?P<rest>[\s\S]*)\Z", views.not_proxied, name="not-proxied"),
]
