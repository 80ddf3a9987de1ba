"""Health endpoints for load balancers: alive, and ready to serve."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.health")
#: A balancer probes every few seconds: an outage is said once, not per probe.
_database = Notice(log)
_redis = Notice(log)
#: How long the probe waits for one of the pool's connections: a request waits
#: longer (the pool's ``timeout``), but with PostgreSQL refusing the pool has
#: none to lend, and a balancer's probe gives up after about 5 s.
PROBE_SECONDS = 2.0


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers. Touches nothing else (also the benchmarks' baseline)."""
    return JsonResponse({"status": "ok"})


def _database_answers() -> None:
    """``SELECT 1``, on a connection of the pool if there is one (waited for
    ``PROBE_SECONDS`` at most), else on Django's own."""
    pool = getattr(connection, "pool", None) if connection.vendor == "postgresql" else None
    if pool is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return
    pool.open()  # opened by Django at its first connection; a no-op once open
    with pool.connection(timeout=PROBE_SECONDS) as conn:
        conn.execute("SELECT 1")


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """The database and, when configured, Redis are reachable."""
    checks: dict[str, str] = {}
    try:
        _database_answers()
        checks["database"] = "ok"
        _database.over("readyz: database reachable")
    except Exception as exc:  # any driver error means "not ready"
        _database.failed("readyz: database unreachable: %s", exc)
        checks["database"] = "unreachable"
    if settings.REDIS_URL:
        try:
            cache.set("readyz", "1", timeout=5)
            checks["redis"] = "ok" if cache.get("readyz") == "1" else "unreachable"
            _redis.over("readyz: redis reachable")
        except Exception as exc:
            _redis.failed("readyz: redis unreachable: %s", exc)
            checks["redis"] = "unreachable"
    ready = all(value == "ok" for value in checks.values())
    response = JsonResponse(
        {"status": "ok" if ready else "unavailable", **checks}, status=200 if ready else 503
    )
    # Said above, once an outage (Django would log each probe's 503 again).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response
