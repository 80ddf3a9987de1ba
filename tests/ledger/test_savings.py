"""The savings arithmetic against hand-computed cases, and the price table."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from curfew_core.ledger.savings import (
    DEFAULT_PRICES,
    Bucket,
    PriceError,
    check_prices,
    discounted_share,
    prices_of,
    savings,
)
from curfew_core.models import AuditEntry, PriceTable
from curfew_core.selectors.ledger import price_table
from curfew_core.services.prices import price_table_set

DEFAULT = prices_of({})


def utc(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 9, 29, hour, minute, tzinfo=UTC)


#: Four passed calls at 12:00 UTC: 4000 tokens in, 2000 out: 1000 / 500 a call.
PASSED = Bucket(utc(12), "pass", count=4, usage_known=4, input_tokens=4000, output_tokens=2000)


def test_the_defaults_are_deepseeks_published_prices() -> None:
    assert DEFAULT.input_per_million == Decimal("0.30")
    assert DEFAULT.output_per_million == Decimal("1.20")
    assert DEFAULT.currency == "USD"
    assert DEFAULT.discount_rate == Decimal("0.5")
    # Peak 01:00-04:00 and 06:00-10:00 UTC; every other minute is off-peak.
    assert DEFAULT.discount_windows == ((600, 60), (240, 360))


@pytest.mark.parametrize(
    ("start", "share"),
    [
        (utc(0), Decimal(1)),  # 00:00-01:00: in 10:00-01:00
        (utc(1), Decimal(0)),  # peak
        (utc(2), Decimal(0)),  # peak
        (utc(3, 30), Decimal("0.5")),  # 03:30-04:00 peak, 04:00-04:30 off-peak
        (utc(5), Decimal(1)),
        (utc(9, 30), Decimal("0.5")),
        (utc(0, 30), Decimal("0.5")),  # 00:30-01:00 off-peak, 01:00-01:30 peak
        (utc(23, 30), Decimal(1)),  # across midnight, all off-peak
    ],
)
def test_the_discounted_share_of_an_hour(start: datetime, share: Decimal) -> None:
    assert discounted_share(start, DEFAULT) == share


def test_short_circuits_at_peak_save_a_typical_calls_full_price() -> None:
    night = Bucket(utc(2), "short-circuit", count=2, requests_not_sent=2)
    result = savings([PASSED, night], DEFAULT)
    # 2 x 1000 in x 0.30/M + 2 x 500 out x 1.20/M = 0.0006 + 0.0012
    assert result.money == Decimal("0.001800")
    assert (result.requests_not_sent, result.decisions) == (2, 6)
    assert (result.input_tokens_not_sent, result.output_tokens_not_generated) == (2000, 1000)
    assert (result.typical_input_tokens, result.typical_output_tokens) == (1000, 500)


def test_an_hour_half_in_the_discount_pays_three_quarters() -> None:
    night = Bucket(utc(0, 30), "short-circuit", count=2, requests_not_sent=2)
    # 0.0018 x (1 - 0.5 x 0.5)
    assert savings([PASSED, night], DEFAULT).money == Decimal("0.001350")


def test_a_clamps_cut_is_tokens_not_asked_for_never_saved_nor_priced() -> None:
    """Lowering ``max_tokens`` from 12,000 to 2,000 does not save 10,000
    tokens (the answer may have used 300): it is counted as not asked for,
    and priced at nothing."""
    clamp = Bucket(utc(20), "clamp", count=5, output_tokens_not_generated=10_000)
    result = savings([clamp], DEFAULT)
    assert result.money == Decimal(0)
    assert result.tokens_not_asked_for == 10_000
    assert result.output_tokens_not_generated == 0
    assert result.requests_not_sent == 0


def test_without_a_known_passed_call_requests_not_sent_cost_nothing_counted() -> None:
    night = Bucket(utc(2), "short-circuit", count=3, requests_not_sent=3)
    result = savings([night], DEFAULT)
    assert result.requests_not_sent == 3
    assert result.money == Decimal(0)
    assert result.typical_input_tokens is None


def test_a_table_of_ones_own() -> None:
    prices = prices_of(
        {
            "input_per_million": 2,
            "output_per_million": "8",
            "currency": "CNY",
            "discount_windows": [["16:30", "00:30"]],
            "discount_rate": "0.75",
        }
    )
    night = Bucket(utc(16), "short-circuit", count=1, requests_not_sent=1)
    clamp = Bucket(utc(16), "clamp", count=1, output_tokens_not_generated=1000)
    result = savings([PASSED, night, clamp], prices)
    # short-circuit: 1000 x 2/M + 500 x 8/M = 0.006; the clamp's cut: not priced;
    # 16:00-17:00 is half in 16:30-00:30: x (1 - 0.75 x 0.5) = 0.625 -> 0.00375
    assert result.money == Decimal("0.003750")
    assert result.tokens_not_asked_for == 1000
    assert result.currency == "CNY"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"currency": "usd"}, "currency"),
        ({"currency": 3}, "currency"),
        ({"input_per_million": -1}, "input_per_million"),
        ({"output_per_million": "lots"}, "output_per_million"),
        ({"output_per_million": True}, "output_per_million"),
        ({"output_per_million": "NaN"}, "output_per_million"),
        ({"discount_rate": 1.5}, "discount_rate"),
        ({"discount_windows": [["25:00", "01:00"]]}, "discount_windows"),
        ({"discount_windows": [["01:00", "01:00"]]}, "discount_windows"),
        ({"discount_windows": "night"}, "discount_windows"),
        ({"tip": 1}, "tip"),
    ],
)
def test_a_bad_field_is_named(changes: dict[str, object], field: str) -> None:
    with pytest.raises(PriceError) as caught:
        check_prices(changes)
    assert list(caught.value.errors) == [field]


@pytest.mark.django_db
def test_the_service_stores_audits_and_refuses_whole(user: User) -> None:
    assert price_table(user.pk) == check_prices(DEFAULT_PRICES)
    saved = price_table_set(
        user=user, changes={"currency": "CNY", "output_per_million": 8}, actor=user, channel="api"
    )
    assert saved["currency"] == "CNY"
    assert price_table(user.pk)["output_per_million"] == "8"
    entry = AuditEntry.objects.get(subject="prices")
    assert entry.changes == {
        "currency": {"old": "USD", "new": "CNY"},
        "output_per_million": {"old": "1.2", "new": "8"},
    }
    with pytest.raises(PriceError) as caught:
        price_table_set(
            user=user, changes={"currency": "EUR", "discount_rate": 2}, actor=user, channel="api"
        )
    assert list(caught.value.errors) == ["discount_rate"]
    assert price_table(user.pk)["currency"] == "CNY"  # nothing changed
    assert AuditEntry.objects.filter(subject="prices").count() == 1
    # The same values again: no write, no audit entry.
    price_table_set(user=user, changes={"currency": "CNY"}, actor=user, channel="api")
    assert AuditEntry.objects.filter(subject="prices").count() == 1
    assert PriceTable.objects.count() == 1
