"""The OpenAI-compatible proxy (``/v1/...``). Filled in by the proxy work."""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []
