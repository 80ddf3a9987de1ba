"""One bad row never blocks a batch (issue 23, finding 1).

A batch the database refuses for one of its rows used to be kept whole and
retried every second, refused every time: that process recorded nothing more
for anyone (on SQLite the driver's overflow was not even a database error,
and the whole batch was lost). Now a flush that fails for a reason other than
an outage is split and retried: the good rows land, the row refused on its
own is dropped, logged and counted (``recorder.refused``). A database that
refuses every write is not a poisoned row: then nothing is dropped, and all
of it is written once the database takes writes again.

The doors no longer let such numbers in (``test_numbers_fit.py``), so these
tests hand the recorder rows directly; a trigger stands for a database that
refuses rows for reasons of its own.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, models
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curfew_core.ledger.entry import Entry
from curfew_core.models import Decision, DecisionHour
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.tokens import token_create

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 9, 29, 15, 30, tzinfo=UTC)


def entry(user: User, n: int, **fields: object) -> Entry:
    values: dict[str, object] = {
        "at": T0 + timedelta(seconds=n),
        "state": "winding",
        "action": "clamp",
        "origin": "verdict",
        "user_id": user.pk,
        "session": f"s{n}",
        "budget_before": 4096,
        "budget_after": 1824,
    }
    values.update(fields)
    return Entry(**values)  # type: ignore[arg-type]


def poisons() -> list[dict[str, object]]:
    """Rows this database refuses: a negative count (the columns' CHECK), a
    number beyond any integer column (the driver's or the database's range),
    and on PostgreSQL one just beyond its ``integer``."""
    found: list[dict[str, object]] = [{"budget_before": -1}, {"input_tokens": 2**63}]
    if connection.vendor == "postgresql":
        found.append({"output_tokens": 2**31})
    return found


def stored() -> list[str]:
    return sorted(Decision.objects.values_list("session", flat=True))


def counted() -> int:
    return DecisionHour.objects.aggregate(n=models.Sum("count"))["n"] or 0


@pytest.mark.parametrize("at", [0, 7, 19])
def test_a_row_the_database_refuses_is_dropped_and_the_rest_written(
    user: User, other_user: User, at: int, caplog: pytest.LogCaptureFixture
) -> None:
    for poison in poisons():
        recorder.discard()
        Decision.objects.all().delete()
        DecisionHour.objects.all().delete()
        refused = recorder.refused
        for n in range(20):
            owner = user if n % 2 else other_user
            recorder.record(entry(owner, n, **(poison if n == at else {})))
        with caplog.at_level(logging.ERROR, logger="curfew.ledger"):
            assert recorder.flush() == 19, poison
        good = sorted(f"s{n}" for n in range(20) if n != at)
        assert stored() == good, poison
        # The hourly totals count what was stored, and only that.
        assert counted() == 19
        assert (recorder.refused - refused, recorder.pending()) == (1, 0)
        assert f"'s{at}'" in caplog.text
        assert "refused" in caplog.text


def test_two_poisoned_rows_in_either_half_are_both_dropped(user: User) -> None:
    [poison, *_] = poisons()
    for n in range(40):
        recorder.record(entry(user, n, **(poison if n in (3, 31) else {})))
    refused = recorder.refused
    assert recorder.flush() == 38
    assert len(stored()) == 38
    assert (counted(), recorder.refused - refused) == (38, 2)


def test_a_refused_row_named_by_its_token_is_dropped_too(user: User, other_user: User) -> None:
    """The proxy's entries wait apart (only their token known): a refused one
    among them is found the same way, and the batch beside them is written."""
    token, _ = token_create(user=user, name="proxy")
    [poison, *_] = poisons()
    for n in range(6):
        recorder.record(entry(user, n, user_id=None, token_id=token.pk, origin="chat"))
    recorder.record(entry(user, 6, user_id=None, token_id=token.pk, origin="chat", **poison))
    for n in range(7, 12):
        recorder.record(entry(other_user, n))
    refused = recorder.refused
    assert recorder.flush() == 11
    assert stored() == sorted(f"s{n}" for n in range(12) if n != 6)
    assert recorder.refused - refused == 1


def test_a_lone_refused_row_waits_until_the_database_takes_another(user: User) -> None:
    """Alone, a refused row cannot be told from a database that refuses every
    write: it is kept (nothing is dropped on a guess); the next flush with
    any other decision writes that one and drops it."""
    [poison, *_] = poisons()
    recorder.record(entry(user, 0, **poison))
    refused = recorder.refused
    with pytest.raises(DatabaseError):
        recorder.flush()
    assert (recorder.pending(), recorder.refused - refused) == (1, 0)
    recorder.record(entry(user, 1))
    assert recorder.flush() == 1
    assert (stored(), recorder.pending(), recorder.refused - refused) == (["s1"], 0, 1)


def _refuse_every_write() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION curfew_test_refuse() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER curfew_test_refuse BEFORE INSERT ON curfew_core_decision "
                "FOR EACH ROW EXECUTE FUNCTION curfew_test_refuse()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER curfew_test_refuse BEFORE INSERT ON curfew_core_decision "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )


def _take_writes_again() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DROP TRIGGER curfew_test_refuse ON curfew_core_decision")
            cursor.execute("DROP FUNCTION curfew_test_refuse()")
        else:
            cursor.execute("DROP TRIGGER curfew_test_refuse")


def test_a_database_refusing_every_write_loses_nothing_and_is_not_split_forever(
    user: User, other_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curfew_core.services import ledger as ledger_service

    real = ledger_service.decisions_write
    attempts = 0

    def counting(**kwargs: object) -> int:
        nonlocal attempts
        attempts += 1
        return real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recorder, "decisions_write", counting)
    _refuse_every_write()
    refused = recorder.refused
    for tick in range(3):
        for n in range(300):
            recorder.record(entry(user if n % 2 else other_user, tick * 1000 + n))
        attempts = 0
        with pytest.raises(DatabaseError):
            recorder.flush()
        # Each tick tries a bounded number of writes, however many rows wait.
        assert 1 < attempts <= recorder.MAX_SPLIT_WRITES + 1
    assert (recorder.pending(), recorder.refused - refused) == (900, 0)
    assert Decision.objects.count() == 0
    _take_writes_again()
    assert recorder.flush() == 900
    assert (Decision.objects.count(), counted(), recorder.pending()) == (900, 900, 0)


INSTANTS = [
    T0,
    T0.replace(microsecond=123456),
    datetime(2026, 3, 29, 1, 0, 0, 1, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 30, tzinfo=UTC),
]


@pytest.mark.parametrize("instant", INSTANTS)
def test_a_stored_instant_gives_its_minute_back(instant: datetime) -> None:
    from curfew_core.services.ledger import at_value, minute_of

    minute = int(instant.timestamp()) // 60
    assert minute_of(at_value()(instant, minute)) == minute


def _decisions() -> st.SearchStrategy[list[tuple[object, ...]]]:
    numbers = st.one_of(st.none(), st.integers(0, 10_000))
    return st.lists(
        st.tuples(
            st.integers(1, 3),  # user
            st.sampled_from(INSTANTS[:3]),
            st.sampled_from(["clamp", "pass", "short-circuit"]),
            st.booleans(),  # exempt
            st.booleans(),  # dry run
            numbers,
            numbers,
            numbers,
            numbers,
        ),
        max_size=12,
    )


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(decisions=_decisions(), kept=st.integers(0, 12))
def test_a_split_batch_holds_every_decision_and_count_once(
    decisions: list[tuple[object, ...]], kept: int
) -> None:
    """Splitting (the refused flush's retry) re-tallies each row from the
    stored row (``_count``, the one tally rule ``add`` uses too): the parts
    hold the very rows and sums ``add`` made,
    the counts of rows already dropped (``bounded``) included, and parts
    split again end in single decisions."""
    from curfew_core.ledger.batch import Batch
    from curfew_core.services.ledger import at_value, minute_of

    whole = Batch(at_value())
    for user_id, at, action, exempt, dry, before, after, used_in, used_out in decisions:
        whole.add(
            Entry(
                at=at,  # type: ignore[arg-type]
                state="winding",
                action=action,  # type: ignore[arg-type]
                origin="verdict",
                exempt=exempt,  # type: ignore[arg-type]
                dry_run=dry,  # type: ignore[arg-type]
                budget_before=before,  # type: ignore[arg-type]
                budget_after=after,  # type: ignore[arg-type]
                input_tokens=used_in,  # type: ignore[arg-type]
                output_tokens=used_out,  # type: ignore[arg-type]
            ),
            user_id,  # type: ignore[arg-type]
        )
    whole.bounded(kept)
    parts = [whole]
    singles = []
    while parts:
        part = parts.pop()
        halves = part.split(minute_of)
        if halves is None:
            singles.append(part)
        else:
            assert all(h.rows or h.tallies for h in halves)
            parts.extend(halves)
    again = Batch(at_value())
    for part in singles:
        assert len(part.rows) + (0 if part.rows else len(part.tallies)) <= 1
        again.absorb(part)
    assert sorted(again.rows, key=repr) == sorted(whole.rows, key=repr)
    assert {k: v for k, v in again.tallies.items() if any(v)} == {
        k: v for k, v in whole.tallies.items() if any(v)
    }


def test_a_recorded_decision_is_tallied_by_the_rule_split_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One tally rule (issue 43): ``add`` counts a decision through ``_count``,
    the rule ``split`` re-tallies stored rows with; they were two copies, the
    hot one inline, held equal only by the test above."""
    from curfew_core.ledger.batch import Batch
    from curfew_core.services.ledger import at_value

    counted: list[tuple[object, ...]] = []
    count = Batch._count

    def watched(self: Batch, row: tuple[object, ...], minute: int) -> None:
        counted.append(row)
        count(self, row, minute)

    monkeypatch.setattr(Batch, "_count", watched)
    batch = Batch(at_value())
    for action, origin in (("clamp", "chat"), ("short-circuit", "embeddings")):
        batch.add(
            Entry(
                at=T0,
                state="winding",
                action=action,
                origin=origin,
                budget_before=9,
                budget_after=4,
            ),
            3,
        )
    assert counted == batch.rows
    assert len(batch.rows) == 2
