"""A team key's rate is each member's own (``CURFEW_TOKEN_RATE``): one member's
burst through the key is that member's 429, never the whole team's. A call
through the key for a member counts on (key, member), exactly the rate a
token of their own would have; a call that names nobody, or a name refused,
counts on the key itself, never on a member; each request is counted once.

Run on SQLite the counts are ``limits``' sliding window in memory; with
``REDIS_URL`` set, the edge's one ``INCRBY`` on Redis: the same rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.services.teams import member_add, team_create, team_token_create
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock

RATE = 3
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def team(transactional_db: None, clock: FrozenClock) -> Iterator[dict[str, Any]]:
    boss = User.objects.create_user("boss")
    alice = User.objects.create_user("alice")
    carol = User.objects.create_user("carol")
    User.objects.create_user("outsider")
    acme = team_create(name="acme", admin=boss)
    member_add(team=acme, user=alice)
    member_add(team=acme, user=carol)
    _, key = team_token_create(team=acme)
    # Nothing listens here: a call sent upstream is a 502, never a 429.
    with override_settings(
        CURFEW_TOKEN_RATE=f"{RATE}/minute", CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1"
    ):
        yield {"key": key, "alice": token_create(user=alice)[1]}


def verdict(token: str, body: dict[str, Any] | None = None, **headers: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.post("/api/v1/verdict", body or {}, content_type="application/json")


def for_member(key: str, name: str) -> Any:
    return verdict(key, {"user": name})


def members(key: str) -> Any:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}").get("/api/v1/team/members")


def test_one_member_over_the_rate_leaves_the_others_served(team: dict[str, Any]) -> None:
    key = team["key"]
    # Alice's own count through the key is exactly the rate: the next is refused.
    assert [for_member(key, "alice").status_code for _ in range(RATE)] == [200] * RATE
    over = for_member(key, "alice")
    assert over.status_code == 429
    assert over.json()["error"] == "rate_limited"
    assert f"rate of {RATE} requests per 60 s" in over.json()["message"]
    assert "member" in over.json()["message"]
    assert 1 <= int(over["Retry-After"]) <= 80
    # Carol, through the same key, has her whole rate (before: 429 for her too).
    assert [for_member(key, "carol").status_code for _ in range(RATE)] == [200] * RATE
    assert for_member(key, "carol").status_code == 429
    # Named in the header the same member is the same count.
    assert verdict(key, HTTP_X_CURFEW_USER="alice").status_code == 429
    # The key taken as itself (the team API) has its own rate, untouched.
    assert members(key).status_code == 200
    # Alice's own token is another token: its own rate.
    assert verdict(team["alice"]).status_code == 200


def test_the_proxy_counts_a_member_through_the_key_on_their_own_rate(
    team: dict[str, Any],
) -> None:
    key = team["key"]
    chat = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_X_CURFEW_USER="alice")
    for _ in range(RATE):
        # Through to the upstream (nothing listens there): counted, not refused.
        assert (
            chat.post("/v1/chat/completions", CHAT, content_type="application/json").status_code
            == 502
        )
    over = chat.post("/v1/chat/completions", CHAT, content_type="application/json")
    assert over.status_code == 429
    assert over.json()["error"]["code"] == "rate_limit_exceeded"
    # The verdict door and the proxy share alice's one count through the key.
    assert for_member(key, "alice").status_code == 429
    assert for_member(key, "carol").status_code == 200


def test_a_refused_name_counts_on_the_key_never_on_a_member(team: dict[str, Any]) -> None:
    key = team["key"]
    for name in ("nobody", "outsider", "boss-not"):
        assert for_member(key, name).status_code == 404
    # Three refused names: the key's own count is spent, no member's is.
    assert for_member(key, "nobody").status_code == 429
    assert members(key).status_code == 429
    assert [for_member(key, "alice").status_code for _ in range(RATE)] == [200] * RATE
    assert [for_member(key, "carol").status_code for _ in range(RATE)] == [200] * RATE


def test_a_nameless_call_counts_on_the_key(team: dict[str, Any]) -> None:
    key = team["key"]
    for _ in range(RATE):
        assert verdict(key).status_code == 400  # names no member: says how
    assert verdict(key).status_code == 429
    assert for_member(key, "alice").status_code == 200


def test_each_call_is_counted_once(team: dict[str, Any]) -> None:
    """A member's call is not also counted on the key (nor the key's on a
    member): the team API keeps its whole rate beside a member's."""
    key = team["key"]
    assert [for_member(key, "alice").status_code for _ in range(RATE)] == [200] * RATE
    assert [members(key).status_code for _ in range(RATE)] == [200] * RATE
    assert members(key).status_code == 429
    assert for_member(key, "carol").status_code == 200


def test_a_personal_token_keeps_its_one_rate(team: dict[str, Any]) -> None:
    alice = team["alice"]
    assert [verdict(alice).status_code for _ in range(RATE)] == [200] * RATE
    assert verdict(alice).status_code == 429
    # Naming herself changes nothing: still her token's one count.
    assert verdict(alice, HTTP_X_CURFEW_USER="alice").status_code == 429


def test_a_warm_member_verdict_costs_redis_what_a_personal_one_does(
    team: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count moved from the key to (key, member), not added to: a warm
    verdict through the key sends Redis what one through a personal token
    sends, its one ``INCRBY`` among them (nothing at all without Redis)."""
    import redis.asyncio.client

    key = team["key"]
    asked = [(key, {"user": "alice"}), (key, {"user": "carol"}), (team["alice"], {})]
    sent: list[str] = []
    execute = redis.asyncio.client.Redis.execute_command
    run = redis.asyncio.client.Pipeline.execute

    async def spied(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(args[0]))
        return await execute(self, *args, **kwargs)

    async def piped(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append("PIPELINE")
        return await run(self, *args, **kwargs)

    monkeypatch.setattr(redis.asyncio.client.Redis, "execute_command", spied)
    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", piped)
    with override_settings(CURFEW_TOKEN_RATE="100/minute"):
        for token, body in asked:  # cold: rows read, each window opened
            assert verdict(token, body).status_code == 200
        each = []
        for token, body in asked:
            sent.clear()
            assert verdict(token, body).status_code == 200
            each.append(list(sent))
    member, other, personal = each
    assert member == other == personal
    assert member.count("INCRBY") == (1 if settings.REDIS_URL else 0)
    assert "PIPELINE" not in member
