"""With Redis, every process counts against the same limits: failures noted in
this process refuse requests served by another, and the other way round."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.test import override_settings

from curfew_core import throttle
from curfew_testkit.server import ServedApp

pytestmark = pytest.mark.redis

LIMITS = {
    "CURFEW_TOKEN_FAILURES_PER_ADDRESS": "5/minute",
    "CURFEW_TOKEN_RATE": "4/minute",
    "CURFEW_SIGNIN_FAILURES_PER_ACCOUNT_ADDRESS": "3/15minutes",
}


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"throttle-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, prefix: str, redis_url: str
) -> Iterator[ServedApp]:
    """Another process of the same deployment: same Redis, same namespace."""
    env = {
        "REDIS_URL": redis_url,
        "CURFEW_REDIS_PREFIX": prefix,
        "CURFEW_MANIFEST_STATIC": "0",
        **LIMITS,
    }
    app = ServedApp(Path(tmp_path_factory.mktemp("throttle-redis")), env=env)
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.stop()


@pytest.fixture
def shared(prefix: str, redis_url: str) -> Iterator[None]:
    """This process on the served app's Redis namespace, counts cleared around the test."""
    with override_settings(REDIS_URL=redis_url, REDIS_PREFIX=prefix, **LIMITS):
        throttle.reset()
        yield
        throttle.reset()


def verdict(app: ServedApp, token: str) -> httpx.Response:
    return httpx.post(
        f"{app.base_url}/api/v1/verdict",
        json={},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def test_failures_noted_here_refuse_requests_served_by_another_process(
    served: ServedApp, shared: None
) -> None:
    assert verdict(served, "cfw_guess-1").status_code == 401  # control: no failures yet
    for _ in range(5):
        throttle.note_token_failure("127.0.0.1")
    response = verdict(served, "cfw_guess-2")
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    # Lifting the counts here lifts them there.
    throttle.reset()
    assert verdict(served, "cfw_guess-3").status_code == 401


def test_the_token_rate_is_counted_across_processes(served: ServedApp, shared: None) -> None:
    token = served.create_user("busy")
    token_id = int(
        served.manage(
            "shell",
            "-c",
            "from curfew_core.models import ApiToken; "
            "print(ApiToken.objects.get(user__username='busy').id)",
        ).stdout.split()[-1]
    )
    for _ in range(3):
        assert verdict(served, token).status_code == 200
    # The fourth request of the minute is made here; the served app refuses the fifth.
    assert throttle.hit_token_rate(token_id) is None
    assert verdict(served, token).status_code == 429
    assert throttle.hit_token_rate(token_id) is not None


def test_two_pools_on_one_redis_share_the_sign_in_counts(prefix: str, shared: None) -> None:
    for _ in range(3):
        throttle.note_signin_failure("ada", "10.0.0.1")
    # A fresh storage, pool and client: what another process would build.
    throttle._current = throttle._build()
    refusal = throttle.signin_refusal("ada", "10.0.0.1")
    assert refusal is not None
    assert refusal.rule == throttle.SIGNIN_ACCOUNT
    assert throttle.signin_refusal("ada", "10.0.0.2") is None
    assert throttle.signin_refusal("grace", "10.0.0.1") is None
