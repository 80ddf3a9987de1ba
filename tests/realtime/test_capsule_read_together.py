"""Capsule states read together (issue 26: a team's change wakes every member's
capsules at once): one query per table whatever the number of users, one payload
for users whose rows say the same, and one user's failure is theirs alone."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from curfew_core.realtime import access, states
from curfew_core.realtime.states import Ask, CapsuleState, read_states
from curfew_core.services.schedules import schedule_update
from tests.realtime.conftest import embed_token, local

pytestmark = pytest.mark.django_db(transaction=True)
NOW = local("2026-09-29 10:00")  # a Tuesday's peak hours: off duty


def _people(count: int, prefix: str) -> list[User]:
    return [User.objects.create_user(f"{prefix}{n}") for n in range(count)]


def _queries(asks: list[Ask]) -> int:
    cache.clear()  # cold: every row, token and flag read from the database
    access.forget_everything()
    with CaptureQueriesContext(connection) as queries:
        assert all(isinstance(state, CapsuleState) for state in read_states(asks, now=NOW))
    return len(queries.captured_queries)


def test_many_users_cost_the_queries_of_a_few() -> None:
    few = [Ask(user.pk, frozenset({embed_token(user)})) for user in _people(3, "few")]
    many = [Ask(user.pk, frozenset({embed_token(user)})) for user in _people(30, "many")]
    # (The tokens' last use is written in batches, off the read: issue 40.)
    assert _queries(few) > 0  # the counter counts
    assert _queries(many) == _queries(few)


def test_users_whose_rows_say_the_same_share_one_payload() -> None:
    ada, bob, cy = _people(3, "p")
    schedule_update(user=cy, changes={"timezone": "Europe/Berlin"}, source="test")
    a, b, c = read_states([Ask(ada.pk), Ask(bob.pk), Ask(cy.pk)], now=NOW)
    assert isinstance(a, CapsuleState)
    assert isinstance(b, CapsuleState)
    assert isinstance(c, CapsuleState)
    assert a.payload is b.payload
    assert a.text is b.text
    assert c.payload is not a.payload  # the control: other settings, its own state
    assert (a.payload["timezone"], c.payload["timezone"]) == ("Asia/Shanghai", "Europe/Berlin")


def test_a_token_read_with_others_speaks_only_for_its_own_user() -> None:
    ada, bob = _people(2, "t")
    ada_token, bob_token = embed_token(ada), embed_token(bob)
    crossed = read_states(
        [Ask(ada.pk, frozenset({bob_token})), Ask(bob.pk, frozenset({ada_token, bob_token}))],
        now=NOW,
    )
    mine, theirs = crossed
    assert isinstance(mine, CapsuleState)
    assert isinstance(theirs, CapsuleState)
    assert mine.refused == {bob_token}
    assert theirs.refused == {ada_token}


def test_one_users_state_that_fails_does_not_stop_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ada, bob, cy = _people(3, "f")
    schedule_update(user=bob, changes={"timezone": "Europe/Berlin"}, source="test")
    real = states.bundle_capsule_payload

    def failing_for_bob(bundle: Any, **kwargs: Any) -> Any:
        if bundle.user_id == bob.pk:
            raise RuntimeError("bob's rows cannot be read")
        return real(bundle, **kwargs)

    asks = [Ask(ada.pk), Ask(bob.pk), Ask(cy.pk)]
    assert all(isinstance(s, CapsuleState) for s in read_states(asks, now=NOW))  # control
    monkeypatch.setattr(states, "bundle_capsule_payload", failing_for_bob)
    first, failed, last = read_states(asks, now=NOW)
    assert isinstance(failed, RuntimeError)
    assert isinstance(first, CapsuleState)
    assert isinstance(last, CapsuleState)
    assert last.payload["state"] == "off-duty"


def test_when_reading_together_fails_each_is_read_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each alone keeps its own fall-back (the last known rows in an outage) and
    its own error, instead of one error for every user."""
    people = _people(3, "o")
    alone: list[int] = []
    real = states.bundle_for

    def together(user_ids: list[int]) -> Any:
        raise DatabaseError("the database is unreachable")

    def counting(user_id: int) -> Any:
        alone.append(user_id)
        return real(user_id)

    monkeypatch.setattr(states, "bundles_for", together)
    monkeypatch.setattr(states, "bundle_for", counting)
    read = read_states([Ask(user.pk) for user in people], now=NOW)
    assert all(isinstance(state, CapsuleState) for state in read)
    assert alone == [user.pk for user in people]


def test_many_users_active_flags_are_one_query(django_assert_num_queries: Any) -> None:
    ada, bob = _people(2, "a")
    User.objects.filter(pk=bob.pk).update(is_active=False)  # no signal
    access.forget_everything()
    with django_assert_num_queries(1):
        flags = access.users_active([ada.pk, bob.pk, 999_999])
    assert flags == {ada.pk: True, bob.pk: False, 999_999: False}
    with django_assert_num_queries(0):  # within the bound
        assert access.users_active([ada.pk, bob.pk]) == {ada.pk: True, bob.pk: False}
