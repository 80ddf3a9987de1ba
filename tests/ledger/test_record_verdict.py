"""The verdict door records its decision without building an ``Entry``
(``recorder.record_verdict``): the batch it leaves must be the one
``record(verdict_entry(...))`` leaves, row for row and tally for tally, for
any verdict and request."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from curfew_core.engine import Verdict
from curfew_core.ledger.entry import verdict_entry
from curfew_core.services import ledger_recorder as recorder
from tests.api.test_answer_encoding import GENERATED, INSTANTS, wire_verdicts
from tests.api.test_wire_contract import kinds

SCOPES = st.one_of(st.none(), st.text(max_size=3), st.text(min_size=190, max_size=230))
BUDGETS = st.one_of(st.none(), st.integers(0, 100_000))


def batch_after(record: Any) -> tuple[list[Any], dict[Any, list[int]]]:
    recorder.discard()
    record()
    batch = recorder._batch
    assert batch is not None
    rows, tallies = list(batch.rows), {key: list(sums) for key, sums in batch.tallies.items()}
    recorder.discard()
    return rows, tallies


def same_batch(
    verdict: Verdict,
    at: datetime,
    session: str | None,
    purpose: str | None,
    budget: int | None,
    user_id: int = 7,
) -> None:
    fast = batch_after(
        lambda: recorder.record_verdict(
            verdict,
            origin="verdict",
            at=at,
            user_id=user_id,
            session=session,
            purpose=purpose,
            budget_before=budget,
        )
    )
    entry = batch_after(
        lambda: recorder.record(
            verdict_entry(
                verdict,
                origin="verdict",
                at=at,
                user_id=user_id,
                token_id=3,
                session=session,
                purpose=purpose,
                budget_before=budget,
            )
        )
    )
    assert fast == entry
    assert len(fast[0]) == 1


def test_every_kind_of_verdict_is_recorded_as_its_entry_is() -> None:
    at = datetime(2026, 9, 29, 15, 30, 1, 250, tzinfo=UTC)
    for verdict in kinds().values():
        for budget in (None, 0, 1, 4096, 10**6):
            same_batch(verdict, at, "s-1", "chat", budget)
            same_batch(verdict, at.replace(microsecond=0), None, None, budget)


@GENERATED
@given(
    verdict=wire_verdicts(),
    at=INSTANTS,
    session=SCOPES,
    purpose=SCOPES,
    budget=BUDGETS,
)
def test_any_verdict_is_recorded_as_its_entry_is(
    verdict: Verdict,
    at: datetime,
    session: str | None,
    purpose: str | None,
    budget: int | None,
) -> None:
    same_batch(verdict, at, session, purpose, budget)
