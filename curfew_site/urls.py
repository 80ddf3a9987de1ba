from django.contrib import admin
from django.urls import include, path

from curfew_core.health import views as health
from curfew_core.realtime import changes
from curfew_core.web.views import favicon

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    # The API's change stream is a real-time door (it follows the channel
    # layer, as the capsule does): mounted under the API's prefix, in its shape.
    path("api/v1/changes", changes.changes, name="api-changes"),
    path("api/v1/", include("curfew_core.api.urls")),
    path("v1/", include("curfew_core.proxy.urls")),
    path("embed/", include("curfew_core.realtime.urls")),
    path("", include("curfew_core.web.urls")),
]

# Never Django's bare HTML: an uncaught error is answered in the door's shape.
handler500 = "curfew_core.outage.server_error"
