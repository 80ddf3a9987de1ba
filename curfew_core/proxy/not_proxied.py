"""Anything else under ``/v1/``: say what the proxy serves, in its door's shape."""

from __future__ import annotations

from django.http.response import HttpResponseBase

from curfew_core.edge.dialects import labelled
from curfew_core.edge.doors import DOORS
from curfew_core.edge.request import EdgeRequest


def served() -> str:
    """What the proxy serves, from the door table (declared once there)."""
    routes = [
        f"{' and '.join(route.methods)} {route.path}"
        for door in DOORS.doors
        if door.prefix.startswith("/v1/")
        for route in door.routes
    ]
    return ", ".join(sorted(routes, key=lambda text: text.split(" ")[-1]))


async def not_proxied(request: EdgeRequest) -> HttpResponseBase:
    dialect = request.door.dialect
    return labelled(
        dialect.error(
            404,
            f"{request.path} is not proxied; the curfew proxy serves {served()}",
            code="not_found",
        ),
        None,
    )
