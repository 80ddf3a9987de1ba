"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings")

# Django must be set up before anything imports models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from curfew_core.api import limits as api_limits  # noqa: E402
from curfew_core.api.lean import LeanApi  # noqa: E402
from curfew_core.asgi_limits import PAGES, BodyGuard  # noqa: E402
from curfew_core.proxy import limits as proxy_limits  # noqa: E402
from curfew_core.proxy.asgi import ProxyRoute  # noqa: E402
from curfew_core.proxy.lean import LeanProxy  # noqa: E402
from curfew_core.realtime.guard import CapsuleGuard  # noqa: E402
from curfew_core.realtime.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # The proxy and the API refuse oversized and unauthenticated bodies
        # before Django reads them (see curfew_core/asgi_limits.py). The proxy
        # (/v1/) is Django without the browser middleware (curfew_core/proxy/asgi.py);
        # the verdict and state routes, and the proxy's warm short-circuits, are
        # answered beside Django (curfew_core/api/lean.py, curfew_core/proxy/lean.py).
        "http": BodyGuard(
            LeanApi(LeanProxy(ProxyRoute(django_asgi_app)))
            if settings.CURFEW_LEAN_API
            else ProxyRoute(django_asgi_app),
            doors=(proxy_limits.MESSAGES_DOOR, proxy_limits.DOOR, api_limits.DOOR, PAGES),
        ),
        # Session sockets must come from ALLOWED_HOSTS (no cross-site WebSocket
        # hijacking); embed-token sockets from any page (see realtime/guard.py).
        "websocket": CapsuleGuard(URLRouter(websocket_urlpatterns)),
    }
)
