"""Failed token checks are throttled per client address on every token door
(429 + Retry-After in that door's shape, close 4429 on the socket); each live
token has a request rate; other addresses and other tokens are not affected.

A live token keeps working from an address that is over its failure limit:
one stale client, or a neighbour behind the same NAT, must not be able to
switch off a gateway fleet (and 256-bit tokens are not guessed anyway)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.models import ApiToken
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.conftest import ApiClient
from tests.throttle.conftest import FakeTime

ATTACKER = "10.6.6.6"
NEIGHBOUR = "10.7.7.7"
VERDICT = "/api/v1/verdict"
CHAT = "/v1/chat/completions"
CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

pytestmark = pytest.mark.django_db


def garbage(n: int) -> str:
    return f"cfw_not-a-real-token-{n:06d}"


def verdict(token: str | None, address: str = ATTACKER, **extra: Any) -> Any:
    headers = {} if token is None else {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    return Client(REMOTE_ADDR=address).post(
        VERDICT, "{}", content_type="application/json", **headers, **extra
    )


def chat(token: str, address: str = ATTACKER) -> Any:
    return Client(REMOTE_ADDR=address).post(
        CHAT,
        json.dumps(CHAT_BODY),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def embed_state(token: str, address: str = ATTACKER) -> Any:
    return Client(REMOTE_ADDR=address).get("/embed/state", {"token": token})


def assert_retry_after(response: Any, *, most: int = 60) -> int:
    seconds = int(response["Retry-After"])
    assert 1 <= seconds <= most
    return seconds


def exhaust(limit: int, door: Any = verdict) -> None:
    for n in range(limit):
        response = door(garbage(n))
        assert response.status_code == 401, (n, response.content)


@pytest.fixture
def embed(user: User) -> str:
    return token_create(user=user, name="capsule", kind=ApiToken.Kind.EMBED)[1]


# -- the verdict API ----------------------------------------------------------------
@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_verdict_api_answers_429_with_retry_after_once_failures_pass_the_limit(
    api: ApiClient,
) -> None:
    exhaust(5)
    response = verdict(garbage(99))
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert "failed token" in response.json()["message"]
    assert_retry_after(response)
    assert verdict(garbage(5)).status_code == 429, "a token seen before is refused too"
    # A live token from the same address keeps working.
    assert verdict(api.token).status_code == 200
    # Another address is not affected.
    assert verdict(garbage(100), address=NEIGHBOUR).status_code == 401


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute", CURFEW_THROTTLE=False)
def test_control_group_with_the_throttle_off_failures_stay_401(api: ApiClient) -> None:
    exhaust(50)
    assert verdict(api.token).status_code == 200


def test_1333_random_tokens_are_stopped_by_the_defaults(api: ApiClient) -> None:
    statuses = [verdict(garbage(n)).status_code for n in range(200)]
    assert statuses.count(401) == 60, "the default allows 60 failures a minute per address"
    assert set(statuses[60:]) == {429}


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_a_missing_token_is_not_counted_as_a_guess(api: ApiClient) -> None:
    for _ in range(20):
        assert verdict(None).status_code == 401
    assert verdict(api.token).status_code == 200


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_a_revoked_token_and_an_embed_token_count_as_failures(
    api: ApiClient, embed: str, user: User
) -> None:
    token, raw = token_create(user=user, name="old")
    from curfew_core.services.tokens import token_revoke

    token_revoke(user=user, token_id=token.id)
    for _ in range(3):
        assert verdict(raw).status_code == 401
    for _ in range(2):
        assert verdict(embed).status_code == 401  # an embed token is not an API token
    assert verdict(raw).status_code == 429


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_the_refusal_lifts_one_window_after_the_failures(
    api: ApiClient, fake_clock: FakeTime
) -> None:
    exhaust(5)
    fake_clock.advance(30)
    response = verdict(garbage(6))
    assert response.status_code == 429
    assert assert_retry_after(response) == 30
    # Refused requests are not counted: the window drains on time.
    for _ in range(20):
        assert verdict(garbage(7)).status_code == 429
    fake_clock.advance(31)
    assert verdict(garbage(8)).status_code == 401


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute", CURFEW_BEHIND_PROXY=False)
def test_a_spoofed_forwarded_for_does_not_escape_the_failure_limit(api: ApiClient) -> None:
    for n in range(5):
        assert verdict(garbage(n), HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code == 401
    response = verdict(garbage(9), HTTP_X_FORWARDED_FOR="198.51.100.99")
    assert response.status_code == 429


@override_settings(
    CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute",
    CURFEW_BEHIND_PROXY=True,
    CURFEW_TRUSTED_PROXIES=["10.1.1.0/24"],
)
def test_behind_the_proxy_each_forwarded_client_is_counted_on_its_own(api: ApiClient) -> None:
    balancer = "10.1.1.1"
    for n in range(5):
        spoof = f"198.51.100.{n}, {ATTACKER}"
        assert verdict(garbage(n), balancer, HTTP_X_FORWARDED_FOR=spoof).status_code == 401
    spoof = f"1.1.1.1, {ATTACKER}"
    assert verdict(garbage(9), balancer, HTTP_X_FORWARDED_FOR=spoof).status_code == 429
    assert verdict(garbage(9), balancer, HTTP_X_FORWARDED_FOR=NEIGHBOUR).status_code == 401


@override_settings(
    CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute",
    CURFEW_BEHIND_PROXY=True,
    CURFEW_TRUSTED_PROXIES=["10.1.1.1"],
)
def test_behind_the_proxy_a_peer_that_is_not_a_named_balancer_is_not_believed(
    api: ApiClient,
) -> None:
    # Issue 23: a client reaching the workers directly (or through a tunnel
    # that does not set the header) must not pick its own address.
    for n in range(5):
        forwarded = f"198.51.100.{n}"
        assert verdict(garbage(n), "10.1.1.2", HTTP_X_FORWARDED_FOR=forwarded).status_code == 401
    assert verdict(garbage(9), "10.1.1.2", HTTP_X_FORWARDED_FOR="1.1.1.1").status_code == 429
    # The balancer's own clients are counted apart from it.
    assert verdict(garbage(9), "10.1.1.1", HTTP_X_FORWARDED_FOR="1.1.1.1").status_code == 401


@override_settings(
    CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute",
    CURFEW_BEHIND_PROXY=True,
    CURFEW_TRUSTED_PROXIES=["10.1.1.0/24"],
)
def test_behind_two_balancers_the_address_left_of_them_counts(api: ApiClient) -> None:
    # The outer balancer appended the client, the inner one the outer; what the
    # client wrote further left changes nothing.
    for n in range(5):
        forwarded = f"198.51.100.{n}, {ATTACKER}, 10.1.1.7"
        assert verdict(garbage(n), "10.1.1.1", HTTP_X_FORWARDED_FOR=forwarded).status_code == 401
    forwarded = f"1.1.1.1, {ATTACKER}, 10.1.1.8"
    assert verdict(garbage(9), "10.1.1.1", HTTP_X_FORWARDED_FOR=forwarded).status_code == 429


# -- the proxy ------------------------------------------------------------------------
@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_the_proxy_answers_429_in_openai_shape(api: ApiClient) -> None:
    exhaust(5, door=chat)
    response = chat(garbage(99))
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert "failed token" in error["message"]
    assert response["X-Curfew-Action"] == "none"
    assert_retry_after(response)
    # One count per address across doors: the API refuses the next failure too.
    assert verdict(garbage(100)).status_code == 429
    assert verdict(api.token).status_code == 200


# -- the capsule's doors -----------------------------------------------------------------
@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_embed_state_answers_429_json(embed: str) -> None:
    exhaust(5, door=embed_state)
    response = embed_state(garbage(99))
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert response["Access-Control-Allow-Origin"] == "*"
    assert_retry_after(response)
    assert embed_state(embed).status_code == 200
    assert embed_state(garbage(100), address=NEIGHBOUR).status_code == 401


@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
def test_the_embed_page_answers_429(embed: str) -> None:
    exhaust(5, door=embed_state)
    response = Client(REMOTE_ADDR=ATTACKER).get("/embed/capsule/", {"token": garbage(99)})
    assert response.status_code == 429
    assert_retry_after(response)
    assert "failed token" in response.content.decode()
    response = Client(REMOTE_ADDR=ATTACKER).get("/embed/capsule/", {"token": embed})
    assert response.status_code == 200


@pytest.mark.django_db(transaction=True)
@override_settings(CURFEW_TOKEN_FAILURES_PER_ADDRESS="5/minute")
async def test_the_socket_closes_with_4429(transactional_db: None) -> None:
    from asgiref.sync import sync_to_async

    from tests.realtime.conftest import open_live, refusal, socket

    def make() -> str:
        user = User.objects.create_user("sock")
        return token_create(user=user, name="capsule", kind=ApiToken.Kind.EMBED)[1]

    token = await sync_to_async(make)()
    for n in range(5):
        code, _ = await refusal(socket(token=garbage(n)))
        assert code == 4401
    code, reason = await refusal(socket(token=garbage(9)))
    assert code == 4429  # codes.CLOSE_RATE_LIMITED, documented in docs/manual.md
    assert "failed token" in reason
    live = socket(token=token)
    assert "state" in await open_live(live)
    await live.disconnect()


# -- the per-token rate -------------------------------------------------------------------
@override_settings(CURFEW_TOKEN_RATE="3/minute")
def test_a_token_over_its_rate_gets_429_and_other_tokens_do_not(
    api: ApiClient, other_api: ApiClient, user: User
) -> None:
    for _ in range(3):
        assert verdict(api.token).status_code == 200
    response = verdict(api.token)
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert "rate of 3 requests per 60 s" in response.json()["message"]
    # A whole minute's burst: to the window's end, then until it weighs 2 of 3
    # (a sliding window's estimate, issue 40): at most 60 + 20 s.
    assert_retry_after(response, most=80)
    # From anywhere: the rate belongs to the token, not the address.
    assert verdict(api.token, address=NEIGHBOUR).status_code == 429
    assert verdict(other_api.token).status_code == 200
    _, second = token_create(user=user, name="second")
    assert verdict(second).status_code == 200


@override_settings(CURFEW_TOKEN_RATE="3/minute")
def test_the_rate_covers_the_proxy_too(api: ApiClient) -> None:
    for _ in range(3):
        assert verdict(api.token).status_code == 200
    response = chat(api.token)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_the_default_rate_lets_a_busy_gateway_through(api: ApiClient) -> None:
    statuses = {verdict(api.token).status_code for _ in range(150)}
    assert statuses == {200}


@override_settings(CURFEW_TOKEN_RATE="3/minute", CURFEW_THROTTLE=False)
def test_control_group_the_rate_is_off_with_the_throttle(api: ApiClient) -> None:
    statuses = {verdict(api.token).status_code for _ in range(10)}
    assert statuses == {200}


def test_the_openapi_document_names_the_429_of_every_token_door(db: None) -> None:
    document = Client().get("/api/v1/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if "401" in operation["responses"]:
                assert "429" in operation["responses"], (method, path)
