"""QA "look" finding 6: the Team page's savings card said "0.00 USD" for a
member's turns answered without a request while her own Activity said
"not known" for the same turns. Both say the money by one rule
(``web.activity.totals.money_words``)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.utils import translation

from curfew_core.ledger.savings import Savings
from curfew_core.web.activity.totals import money_total
from curfew_core.web.team.words import money


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _saved(amount: str, unpriced: int) -> Savings:
    return Savings(
        decisions=6,
        requests_not_sent=6,
        output_tokens_not_generated=0,
        input_tokens_not_sent=0,
        money=Decimal(amount),
        currency="USD",
        typical_input_tokens=None,
        typical_output_tokens=None,
        unpriced_requests=unpriced,
    )


def test_unpriced_turns_are_not_known_on_both_pages() -> None:
    saved = _saved("0", 6)
    assert money(saved) == "not known"
    assert money_total(saved, _saved("0", 0), days=7).number == money(saved)


def test_a_priced_sum_is_the_same_words_on_both_pages() -> None:
    saved = _saved("1.2", 0)
    assert money(saved) == money_total(saved, _saved("0", 0), days=7).number
    assert "1.20" in money(saved)
