from django.contrib import admin
from django.urls import include, path

from curfew_core.health import views as health
from curfew_core.web.shell import favicon
from curfew_core.web.signin import admin_login

# The token doors (the whole API under /api/v1/, the proxy at /v1/) are the
# edge's, declared in curfew_core/edge/doors.py: Django never sees them.
urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", favicon, name="favicon"),
    # The admin's sign-in answers a lock-out as the page's does (429, Retry-After).
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("embed/", include("curfew_core.realtime.urls")),
    path("", include("curfew_core.web.urls")),
]

# Never Django's bare HTML: an uncaught error is answered in the door's shape.
handler400 = "curfew_core.edge.outage.bad_request"
handler403 = "curfew_core.edge.outage.forbidden"
handler404 = "curfew_core.edge.outage.not_found"
handler500 = "curfew_core.edge.outage.server_error"
