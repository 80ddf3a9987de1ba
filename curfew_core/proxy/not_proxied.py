"""Anything else under a model door (``/v1/``, ``/v1beta/``): say what the
proxy serves, in its door's shape."""

from __future__ import annotations

from django.http.response import HttpResponseBase

from curfew_core.edge.dialects import labelled
from curfew_core.edge.doors import DOORS
from curfew_core.edge.request import EdgeRequest


def served() -> str:
    """What the proxy serves, from the door table (declared once there): the
    routes of every door that speaks a wire protocol."""
    routes = [
        f"{' and '.join(route.methods)} {route.path}"
        for door in DOORS.doors
        if door.dialect.protocol is not None
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
