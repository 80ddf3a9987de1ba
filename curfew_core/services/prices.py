"""A person's price table for the savings view: validated, stored whole, audited."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from curfew_core.ledger.savings import check_prices
from curfew_core.models import AuditEntry, PriceTable
from curfew_core.services.audit import audit_record, changed_fields


@transaction.atomic
def price_table_set(
    *, user: User, changes: Mapping[str, Any], actor: User | None, channel: str
) -> dict[str, Any]:
    """Lay ``changes`` over the stored table (defaults where none) and store
    the whole canonical table; returns it. ``PriceError`` names every bad or
    unknown field, and then nothing is written. Each change is audited
    (subject ``prices``) with every changed field's old and new value."""
    row = PriceTable.objects.select_for_update().filter(user=user).first()
    old = check_prices(row.config if row else {})
    new = check_prices({**old, **changes})
    changed = changed_fields(old, new, new)
    if not changed:
        return new
    if row is None:
        PriceTable.objects.create(user=user, config=new)
    else:
        row.config = new
        row.save(update_fields=["config", "updated_at"])
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.PRICES,
        action="prices saved",
        changes=changed,
    )
    return new
