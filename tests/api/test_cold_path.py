"""The cold path of a verdict is one query (issue 40).

A verdict for a user not seen lately (nothing cached, or every entry older
than the freshness bound) read the token, then the user's schedule,
overrides, team membership, language and team, one query each, and stamped
the token's ``last_used_at`` with an UPDATE of its own: 5 to 7 queries. Now
the token is read joined to its user's rows and their team's, in one query,
and ``last_used_at`` is written in batches, off the request.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DatabaseError
from django.test.utils import override_settings

from curfew_core.models import ApiToken
from curfew_core.schedules.override_commands import from_words
from curfew_core.selectors import tokens
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.services.teams import member_add, team_create, team_token_create
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import local
from tests.api.test_cache_after_commit import Wall, wall

__all__ = ["wall"]  # a fixture, shared

VERDICT = "/api/v1/verdict"
PEAK = {"at": "2026-09-29T10:00:00+08:00"}
#: The freshness bound in these tests (seconds of the cache's own clock).
BOUND = 5


def verdict(token: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post(
        VERDICT, {**PEAK, **(body or {})}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    found: dict[str, Any] = answer.json()
    return found


@pytest.fixture
def people(transactional_db: None, settings: Any) -> dict[str, Any]:
    settings.CURFEW_CACHE_FRESH_SECONDS = BOUND
    boss = User.objects.create_user("boss")
    alice = User.objects.create_user("alice")
    loner = User.objects.create_user("loner")
    acme = team_create(name="acme", admin=boss)
    member_add(team=acme, user=alice)
    # Saved rows in every table the verdict reads: a schedule, an override, a language.
    schedule_update(user=loner, changes={"peak_shift": False}, source="test")
    override_apply(user=alice, command=from_words(["off"]), now=local("2026-09-29 09:00"))
    _, key = team_token_create(team=acme)
    return {
        "key": key,
        "alice": token_create(user=alice)[1],
        "loner": token_create(user=loner)[1],
        "users": {"alice": alice, "loner": loner},
    }


@pytest.mark.parametrize("who", ["loner", "alice"])
def test_a_cold_verdict_is_one_query(
    people: dict[str, Any], django_assert_num_queries: Any, who: str
) -> None:
    """Nothing cached: the token, the user's rows (and a member's team) in one query."""
    expected = verdict(people[who])
    cache.clear()
    tokens.forget_seen()
    with django_assert_num_queries(1):
        assert verdict(people[who]) == expected
    with django_assert_num_queries(0):  # and warm from then on
        assert verdict(people[who]) == expected


@pytest.mark.parametrize("who", ["loner", "alice"])
def test_a_user_not_seen_lately_is_one_query(
    people: dict[str, Any], django_assert_num_queries: Any, wall: Wall, who: str
) -> None:
    """Every entry older than the bound: re-read in one query, and replaced."""
    expected = verdict(people[who])
    wall.advance(BOUND + 0.01)
    with django_assert_num_queries(1):
        assert verdict(people[who]) == expected
    with django_assert_num_queries(0):
        assert verdict(people[who]) == expected


def test_what_the_one_query_reads_is_what_the_tables_say(people: dict[str, Any]) -> None:
    """The joined read is the same verdict as the per-table one was: the
    loner's saved schedule (no peak hours), alice's override and her team."""
    assert verdict(people["loner"])["state"] == "on-duty"  # peak_shift off
    alice = verdict(people["alice"])
    assert alice["action"] == "short-circuit"  # her override
    cache.clear()
    tokens.forget_seen()
    assert verdict(people["alice"]) == alice
    assert verdict(people["key"], {"user": "alice"}) == alice


def test_a_team_key_naming_a_member_not_seen_lately(
    people: dict[str, Any], django_assert_num_queries: Any, wall: Wall
) -> None:
    """The key's own check and the member's rows, each stale: one query each."""
    expected = verdict(people["key"], {"user": "alice"})
    wall.advance(BOUND + 0.01)
    with django_assert_num_queries(2):
        assert verdict(people["key"], {"user": "alice"}) == expected
    with django_assert_num_queries(0):
        assert verdict(people["key"], {"user": "alice"}) == expected


def test_a_save_is_still_seen_by_the_next_verdict(people: dict[str, Any]) -> None:
    assert verdict(people["loner"])["state"] == "on-duty"
    schedule_update(user=people["users"]["loner"], changes={"peak_shift": True}, source="test")
    assert verdict(people["loner"])["state"] == "off-duty"


def test_a_revoked_token_is_refused_cold(people: dict[str, Any]) -> None:
    ApiToken.objects.filter(user=people["users"]["loner"]).update(revoked_at="2026-01-01T00:00Z")
    cache.clear()
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {people['loner']}").post(
        VERDICT, PEAK, content_type="application/json"
    )
    assert answer.status_code == 401


# -- last_used_at, in batches ---------------------------------------------------------


def test_last_use_is_written_in_one_batch_off_the_request(
    people: dict[str, Any], django_assert_num_queries: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens.flush_used()
    monkeypatch.setattr(tokens.time, "time", lambda: 1_790_000_000.5)  # uses of one second
    for who in ("loner", "alice", "key"):
        verdict(people[who], {"user": "alice"} if who == "key" else None)
    assert not ApiToken.objects.filter(last_used_at__isnull=False).exists()  # not on the request
    with django_assert_num_queries(1):  # one UPDATE for the three (one second)
        assert tokens.flush_used() == 3
    assert ApiToken.objects.filter(last_used_at__isnull=False).count() == 3
    with django_assert_num_queries(0):
        assert tokens.flush_used() == 0


def test_many_uses_are_written_by_few_statements_each_with_its_second(
    people: dict[str, Any], monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    """A token's use is written as the latest use of its second: one plain
    UPDATE a second of use (and a chunk), not a CASE compiled token by token
    (a tenth of a verdict's time at 10,000 users, issue 40)."""
    tokens.flush_used()
    user = people["users"]["loner"]
    made = [token_create(user=user, name=f"t{n}", kind="api")[0].pk for n in range(5)]
    base = 1_790_000_000.0
    uses = {made[0]: base + 0.2, made[1]: base + 0.7, made[2]: base + 0.5, made[3]: base + 3.1}
    for token_id, at in uses.items():
        monkeypatch.setattr(tokens.time, "time", lambda at=at: at)
        tokens.note_used(token_id)
    with django_assert_num_queries(2):  # two seconds of use
        assert tokens.flush_used() == 4
    stored = dict(ApiToken.objects.filter(pk__in=made).values_list("pk", "last_used_at"))
    assert {pk: at.timestamp() if at else None for pk, at in stored.items()} == {
        made[0]: base + 0.7,  # the latest of its second
        made[1]: base + 0.7,
        made[2]: base + 0.7,
        made[3]: base + 3.1,
        made[4]: None,  # the control: not used, not written
    }


def test_a_refused_batch_is_kept_for_the_next_try(
    people: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens.flush_used()
    verdict(people["loner"])

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise DatabaseError("the database is away")

    with monkeypatch.context() as patch:
        patch.setattr("django.db.models.query.QuerySet.update", refuse)
        assert tokens.flush_used() == 0
    assert tokens.pending_uses() == 1
    assert tokens.flush_used() == 1
    assert ApiToken.objects.get(user=people["users"]["loner"]).last_used_at is not None


@override_settings(CURFEW_LEDGER_FLUSH_SECONDS=0.0)
def test_uses_are_noted_not_written_per_request(people: dict[str, Any]) -> None:
    tokens.flush_used()
    for _ in range(5):
        verdict(people["loner"])
    assert tokens.pending_uses() == 1
