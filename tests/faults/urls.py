"""The real URLs plus views that fail on purpose, one per door (tests only)."""

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.urls import path
from redis.exceptions import ConnectionError as RedisConnectionError

from curfew_site.urls import handler500
from curfew_site.urls import urlpatterns as real_urlpatterns

__all__ = ["handler500", "urlpatterns"]

FAULTS = {
    "redis": lambda: RedisConnectionError("Error 111 connecting to 127.0.0.1:6379."),
    "database": lambda: OperationalError("could not connect to server"),
    "bug": lambda: ValueError("a plain bug"),
}


def boom(request: HttpRequest, fault: str) -> HttpResponse:
    raise FAULTS[fault]()


urlpatterns = [
    # Under /api/ but not /api/v1/ (the edge's, every path): Django's, in the API's shape.
    path("api/boom/<str:fault>", boom),
    path("embed/state/boom/<str:fault>", boom),
    path("embed/capsule/boom/<str:fault>", boom),
    path("boom/<str:fault>", boom),
    *real_urlpatterns,
]
