"""A write whose COMMIT went unanswered (the link to PostgreSQL lost just
then) is neither written twice nor lost: the recorder asks PostgreSQL how
that transaction ended (``pg_xact_status``) before it writes again.

Found from outside: ``tests/production/test_postgres_gone_under_load.py``
stored 3,188 decisions for 3,168 answered verdicts when a cut landed on a
flush's commit (a batch of 20 made, its answer lost, written again).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection

from curfew_core.ledger.entry import Entry
from curfew_core.models import Decision, DecisionHour
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.ledger import CommitInDoubt

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="PostgreSQL's own transaction status"
    ),
]

T0 = datetime(2026, 9, 29, 15, 30, tzinfo=UTC)


def _record(user: User, n: int) -> None:
    for i in range(n):
        recorder.record(
            Entry(
                at=T0 + timedelta(seconds=i),
                state="winding",
                action="clamp",
                origin="chat",
                user_id=user.pk,
                reason="winding",
                budget_before=4096,
                budget_after=1824,
            )
        )


def _answer_lost_once(monkeypatch: pytest.MonkeyPatch, *, made: bool) -> None:
    """The next COMMIT is made (or not) and its answer never comes back."""
    connection.ensure_connection()
    real: Callable[[], None] = connection._commit  # type: ignore[attr-defined]

    def lost() -> None:
        monkeypatch.undo()
        if made:
            real()
        else:
            connection.connection.rollback()
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(connection, "_commit", lost)


@pytest.mark.parametrize("made", [True, False], ids=["commit-made", "commit-not-made"])
def test_a_write_whose_answer_was_lost_is_stored_once(
    user: User, monkeypatch: pytest.MonkeyPatch, made: bool
) -> None:
    _record(user, 20)
    _answer_lost_once(monkeypatch, made=made)
    with pytest.raises(CommitInDoubt):
        recorder.flush()
    # The control: the lost answer hid a commit, or there was none.
    assert Decision.objects.filter(user=user).count() == (20 if made else 0)
    assert recorder.pending() == 20  # kept until PostgreSQL says how it ended

    _record(user, 1)  # and a decision that came meanwhile
    recorder.flush()

    assert recorder.pending() == 0
    assert Decision.objects.filter(user=user).count() == 21
    assert sum(DecisionHour.objects.filter(user=user).values_list("count", flat=True)) == 21


def test_a_write_still_in_progress_is_asked_about_again(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(user, 5)
    _answer_lost_once(monkeypatch, made=True)
    with pytest.raises(CommitInDoubt):
        recorder.flush()
    answers = iter(["in progress", "committed"])
    monkeypatch.setattr(recorder, "decisions_write_status", lambda xact: next(answers))
    recorder.flush()
    assert recorder.pending() == 5  # not yet known: neither written nor dropped
    recorder.flush()
    assert recorder.pending() == 0
    assert Decision.objects.filter(user=user).count() == 5
