"""Reading the decision ledger: a page of decisions, the hourly totals, the
price table, and what was saved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from curfew_core.ledger.savings import Bucket, Prices, Savings, check_prices, prices_of, savings
from curfew_core.models import Decision, DecisionHour, PriceTable
from curfew_core.schema.decisions import DecisionRow

#: The most decisions one page holds, and one page's when none is asked for.
MAX_PER_PAGE = 200
DEFAULT_PER_PAGE = 50
#: The highest page of decisions the API takes.
MAX_PAGE = 100_000


@dataclass(frozen=True, slots=True)
class DecisionPage:
    rows: list[dict[str, Any]]
    page: int
    per_page: int
    #: The next page's number, or None on the last page.
    next_page: int | None


#: The ``Decision`` column behind an API field whose name is not the column's.
_COLUMNS = {"id": "client_id", "session_id": "session"}
#: ``(API name, model column)`` for each field of the API's decision row
#: (``schema.decisions.DecisionRow``), in its order: read off the schema, not
#: listed again (``tests/test_declare_once.py`` holds each a column of the model).
DECISION_FIELDS = tuple((name, _COLUMNS.get(name, name)) for name in DecisionRow.model_fields)
#: Free text the model keeps blank (``""``) and the API says as ``null``.
_BLANK_IS_NULL = frozenset({"session", "purpose"})


def decision_json(row: Decision) -> dict[str, Any]:
    """One decision as the API's ``DecisionRow``: each field the model's
    column of the same name (``_COLUMNS`` where not), an instant in ISO 8601."""
    said: dict[str, Any] = {}
    for name, column in DECISION_FIELDS:
        value = getattr(row, column)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif column in _BLANK_IS_NULL:
            value = value or None
        said[name] = value
    return said


def of_session(session: str) -> Q:
    """One session's decisions, said so that the database sees the partial
    index ``decision_user_session`` (``session <> ''``) applies: read from
    that session's rows only, not from all the user's (issue 40)."""
    return Q(session=session) & ~Q(session="")


def decisions_page(
    *,
    user_id: int,
    since: datetime | None = None,
    until: datetime | None = None,
    session: str | None = None,
    action: str | None = None,
    page: int = 1,
    per_page: int = 50,
) -> DecisionPage:
    """The user's decisions, newest first, in ``[since, until)``."""
    rows = Decision.objects.filter(user_id=user_id)
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    if session:
        rows = rows.filter(of_session(session))
    elif session is not None:
        rows = rows.filter(session="")
    if action is not None:
        rows = rows.filter(action=action)
    first = (page - 1) * per_page
    found = list(rows.order_by("-at", "-id")[first : first + per_page + 1])
    more = len(found) > per_page
    return DecisionPage(
        rows=[decision_json(row) for row in found[:per_page]],
        page=page,
        per_page=per_page,
        next_page=page + 1 if more else None,
    )


def price_table(user_id: int) -> dict[str, Any]:
    """The user's whole price table (the defaults where they set nothing)."""
    row = PriceTable.objects.filter(user_id=user_id).first()
    return check_prices(row.config if row else {})


def prices_for(user_id: int) -> Prices:
    row = PriceTable.objects.filter(user_id=user_id).first()
    return prices_of(row.config if row else {})


#: The stored sums a savings ``Bucket`` reads after its count, in its order.
BUCKET_SUMS = (
    "requests_not_sent",
    "output_tokens_not_generated",
    "usage_known",
    "input_tokens",
    "output_tokens",
)


def hour_buckets(*, user_id: int, since: datetime, until: datetime) -> list[Bucket]:
    """The user's hourly totals whose hour began in ``[since, until)``."""
    rows = DecisionHour.objects.filter(
        user_id=user_id, hour_start__gte=since, hour_start__lt=until
    ).values_list("hour_start", "action", "count", *BUCKET_SUMS, "state")
    return [Bucket(*row) for row in rows]


def savings_between(*, user_id: int, since: datetime, until: datetime) -> Savings:
    """What the curfew saved the user in ``[since, until)`` (whole hours)."""
    return savings_of(
        user_id=user_id, buckets=hour_buckets(user_id=user_id, since=since, until=until)
    )


def savings_of(
    *, user_id: int, buckets: Sequence[Bucket], typical_of: Sequence[Bucket] = ()
) -> Savings:
    """What ``buckets`` (hourly totals, however filtered) saved, at the user's
    prices; ``typical_of`` prices a request not sent where ``buckets`` know no
    passed call's usage (see ``ledger.savings.savings``)."""
    return savings(buckets, prices_for(user_id), typical_of=typical_of)
