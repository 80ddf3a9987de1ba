"""A team key's member names through the cache (issue 40): a name some process
looked up lately is the cache's ``team-member:`` entry, read where the member's
rows are read (the process's layer first, then Redis), so forgetting the
process's own names (any name dropped anywhere forgets them all) costs no
thread and no database. "No such member" is not held in the layer, and a drop
that arrives while the name is read from Redis wins."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from cachetools import TLRUCache
from django.test import override_settings

from curfew_core.edge import team_caller
from curfew_core.selectors import users
from curfew_core.selectors.teams import member_key
from curfew_core.store import async_cache, local_layer
from tests.api.conftest import clock
from tests.teams.test_team_key_doors import post, team

__all__ = ["clock", "team"]

VERDICT = {"max_tokens": 64}


def test_a_name_the_cache_holds_is_served_without_the_thread(
    team: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    team_caller.forget()
    first = post(team["key"], "/api/v1/verdict", {**VERDICT, "user": "alice"})
    assert first.status_code == 200, first.content
    team_caller.forget()  # as a drop of any member's name, anywhere, does

    def cold(*args: Any) -> Any:
        raise AssertionError("the member's name was looked up on the thread")

    monkeypatch.setattr(team_caller, "_cold_member", cold)
    again = post(team["key"], "/api/v1/verdict", {**VERDICT, "user": "alice"})
    assert again.status_code == 200, again.content
    assert again.json()["state"] == first.json()["state"]


def test_a_stranger_is_still_refused(team: dict[str, Any]) -> None:
    team_caller.forget()
    assert post(team["key"], "/api/v1/verdict", {**VERDICT, "user": "bob"}).status_code == 404
    team_caller.forget()
    assert post(team["key"], "/api/v1/verdict", {**VERDICT, "user": "bob"}).status_code == 404


@pytest.fixture
def redis_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A layer that is on, empty, and a Redis read that answers ``answer['value']``
    (after ``answer['meanwhile']``, if set: what arrives while Redis answers)."""
    small: TLRUCache[str, Any] = TLRUCache(maxsize=8, ttu=local_layer._until)
    monkeypatch.setattr(local_layer, "_layer", small)
    monkeypatch.setattr(local_layer, "active", lambda: True)
    answer: dict[str, Any] = {"value": None, "meanwhile": None}

    async def get_many(keys: list[str], *, keep: bool = True) -> list[Any]:
        assert not keep  # the caller decides what the layer holds
        if answer["meanwhile"] is not None:
            answer["meanwhile"]()
        return [answer["value"]]

    monkeypatch.setattr(async_cache, "read_now", lambda keys: None)
    monkeypatch.setattr(async_cache, "supported", lambda: True)
    monkeypatch.setattr(async_cache, "get_many", get_many)
    team_caller.forget()
    yield answer
    team_caller.forget()


def cached_id(team_id: int, name: str) -> int | None:
    return asyncio.run(team_caller._cached_id(team_id, name))


def test_a_member_read_from_redis_is_held_and_remembered(redis_read: dict[str, Any]) -> None:
    redis_read["value"] = 7
    with override_settings(CURFEW_CACHE_FRESH_SECONDS=300):
        assert cached_id(1, "alice") == 7
        assert local_layer.read([member_key(1, "alice")]) == [7]
        assert team_caller._known_id(1, "alice") == (7, True)


def test_no_such_member_is_not_held(redis_read: dict[str, Any]) -> None:
    redis_read["value"] = 0  # ``selectors.teams``: no such member, kept 5 s in Redis
    assert cached_id(1, "bob") is None
    assert local_layer.read([member_key(1, "bob")]) == [local_layer.MISSING]
    assert team_caller._known_id(1, "bob") == (None, False)


def test_a_drop_while_redis_answers_wins(redis_read: dict[str, Any]) -> None:
    redis_read["value"] = 7
    # Alice left (or was renamed) on another process while this one read Redis.
    redis_read["meanwhile"] = lambda: local_layer.drop([member_key(1, "alice")])
    assert cached_id(1, "alice") == 7  # this call's answer, as a read a moment earlier
    assert local_layer.read([member_key(1, "alice")]) == [local_layer.MISSING]
    assert team_caller._known_id(1, "alice") == (None, False)


def test_a_drop_while_the_name_is_remembered_wins(
    redis_read: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The drop lands after the layer kept the entry, while the name is being
    # remembered (its forget_names may run before the memo is written).
    redis_read["value"] = 7
    remember = team_caller._remember

    def remembered_then_dropped(team_id: int, name: str, user_id: int) -> None:
        local_layer.drop([member_key(team_id, name)])
        remember(team_id, name, user_id)

    monkeypatch.setattr(team_caller, "_remember", remembered_then_dropped)
    with override_settings(CURFEW_CACHE_FRESH_SECONDS=300):
        assert cached_id(1, "alice") == 7
        assert team_caller._known_id(1, "alice") == (None, False)


def test_a_name_is_judged_once_then_remembered(transactional_db: None) -> None:
    users.forget_names()
    assert users.is_username("alice")
    assert not users.is_username("two words")
    before = users._judged_kept.cache_info()
    assert users.is_username("alice")
    assert not users.is_username("two words")
    after = users._judged_kept.cache_info()
    assert after.hits == before.hits + 2
    assert not users.is_username("a" * 151)  # too long for anyone: judged, not kept
    assert users._judged_kept.cache_info().currsize == after.currsize
