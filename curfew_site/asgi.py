"""ASGI entry point: HTTP through the edge, WebSockets through Channels.

Any conformant ASGI server serves it (``make run`` and ``bin/serve`` run
uvicorn; the suite also drives it under Daphne and with every scope shape the
spec allows). The edge (``curfew_core/edge``) answers the token doors itself
and hands everything else to Django behind its body guard.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings")

# Django must be set up before anything imports models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from curfew_core.edge.app import Edge  # noqa: E402
from curfew_core.edge.lifespan import lifespan  # noqa: E402
from curfew_core.realtime.guard import CapsuleGuard  # noqa: E402
from curfew_core.realtime.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": Edge(django_asgi_app),
        # Session sockets must come from ALLOWED_HOSTS (no cross-site WebSocket
        # hijacking); embed-token sockets from any page (see realtime/guard.py).
        "websocket": CapsuleGuard(URLRouter(websocket_urlpatterns)),
        # A server's stop writes the ledger's and the tokens' last batches.
        "lifespan": lifespan,
    }
)
