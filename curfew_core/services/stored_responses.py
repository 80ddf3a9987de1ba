"""Recording and forgetting who made a stored response (``models.StoredResponse``).

The proxy records an owner once the upstream answered a passed ``POST
/v1/responses`` with its id (``proxy.stored_owner``: after the upstream was
asked, never before), forgets it when the upstream deleted the response, and
the servers' hourly prune (``services.ledger_prune``) drops what the upstream
no longer keeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from curfew_core.models import StoredResponse

#: How long the upstream keeps a stored response (OpenAI: 30 days); a record
#: older than this names nothing the upstream could still answer.
STORED_RESPONSE_DAYS = 30
#: The most rows one prune statement deletes (each its own short transaction).
PRUNE_BATCH = 5_000


def stored_response_record(*, response_id: str, user_id: int, at: datetime) -> None:
    """``response_id`` is ``user_id``'s, made at ``at``. An id recorded
    already keeps its first owner (an upstream never hands out one id twice;
    if it did, nobody new gains the old one)."""
    StoredResponse.objects.bulk_create(
        [StoredResponse(response_id=response_id, user_id=user_id, created_at=at)],
        ignore_conflicts=True,
    )


def stored_response_forget(*, response_id: str) -> None:
    """The upstream deleted ``response_id``: its owner is forgotten."""
    StoredResponse.objects.filter(response_id=response_id).delete()


def stored_responses_prune(*, before: datetime, batch: int = PRUNE_BATCH) -> int:
    """Delete the owners of responses made before ``before`` (by the
    ``created_at`` index, at most ``batch`` rows a statement, each its own
    transaction). Returns how many went."""
    deleted = 0
    while True:
        old = StoredResponse.objects.filter(created_at__lt=before).values("response_id")[:batch]
        with transaction.atomic():
            gone, _ = StoredResponse.objects.filter(response_id__in=old).delete()
        deleted += gone
        if gone < batch:
            return deleted


def stored_response_cutoff(now: datetime) -> datetime:
    """Records made before this are past the upstream's retention."""
    return now - timedelta(days=STORED_RESPONSE_DAYS)
