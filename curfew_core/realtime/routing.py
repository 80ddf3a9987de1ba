"""WebSocket routes. Filled in by the live-capsule work."""

from django.urls import URLPattern, URLResolver

websocket_urlpatterns: list[URLPattern | URLResolver] = []
