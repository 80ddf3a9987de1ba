"""Whose a stored response is (``models.StoredResponse``): read by the proxy
before it forwards a ``GET`` / ``DELETE /v1/responses/<id>`` or a create that
names a ``previous_response_id`` (``proxy.stored_owner``)."""

from __future__ import annotations

from curfew_core.models import StoredResponse


def response_owner(response_id: str) -> int | None:
    """The user id of the person who made ``response_id`` through the proxy,
    or ``None``: never made here (or made before owners were recorded, or
    deleted, or pruned)."""
    return (
        StoredResponse.objects.filter(response_id=response_id)
        .values_list("user_id", flat=True)
        .first()
    )
