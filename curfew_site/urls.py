from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("curfew_core.api.urls")),
    path("v1/", include("curfew_core.proxy.urls")),
    path("", include("curfew_core.web.urls")),
]
