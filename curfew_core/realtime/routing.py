"""WebSocket routes (behind ``CapsuleGuard`` in ``curfew_site.asgi``)."""

from django.urls import URLPattern, URLResolver, path

from curfew_core.realtime.consumers import CapsuleConsumer
from curfew_core.realtime.team import TeamConsumer

websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/capsule/", CapsuleConsumer.as_asgi(), name="ws-capsule"),
    path("ws/team/", TeamConsumer.as_asgi(), name="ws-team"),
]
