"""Each door answers an outage in its own shape (in-process, against a Redis that
refuses connections, one that accepts and never answers, and one that hangs up).

The API and ``/embed/state``: JSON ``{"error", "message"}``, 503, ``Retry-After``.
The proxy: OpenAI's error JSON, 503, ``Retry-After``. Pages (sign-in, settings,
the iframe capsule): the styled 503 page. Never Django's HTML 500.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.faults.conftest import broken_redis

pytestmark = pytest.mark.django_db


@pytest.fixture
def tokens(user: User) -> dict[str, str]:
    """Made while the cache works; the outage starts afterwards."""
    return {
        "api": token_create(user=user, name="api")[1],
        "embed": token_create(user=user, name="embed", kind=ApiToken.Kind.EMBED)[1],
    }


@pytest.fixture(params=["refused", "stalled", "hangs-up"])
def redis_refused(
    request: pytest.FixtureRequest, settings: Any, tokens: dict[str, str]
) -> Iterator[None]:
    """The cache's Redis is down, three ways (each with a short client timeout)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    with broken_redis(request.param) as url:
        settings.REDIS_URL = url
        settings.CACHES = {
            "default": {
                "BACKEND": "curfew_core.store.redis_cache.SharedRedisCache",
                "LOCATION": url,
                "KEY_PREFIX": "faults",
                "OPTIONS": {
                    "socket_timeout": 0.5,
                    "socket_connect_timeout": 0.5,
                    "retry": Retry(NoBackoff(), 0),
                },
            }
        }
        yield


def client() -> Client:
    # As a server runs: an uncaught exception is answered, not raised into the test.
    return Client(raise_request_exception=False)


def assert_json_outage(response: Any) -> dict[str, Any]:
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"].isdigit()
    body: dict[str, Any] = json.loads(response.content)
    return body


def assert_page_outage(response: Any) -> str:
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert response["Retry-After"].isdigit()
    text: str = response.content.decode()
    assert "Temporarily unavailable" in text
    assert "/static/curfew/curfew.css" in text, "styled with the app's own stylesheet"
    assert "style=" not in text, "no inline styles under the CSP"
    assert "<style" not in text
    assert "Server Error (500)" not in text
    return text


def test_control_the_doors_answer_while_the_cache_works(user, tokens):
    """Control group: the same requests succeed when nothing is down."""
    c = client()
    assert c.get("/embed/state", {"token": tokens["embed"]}).status_code == 200
    assert c.get("/embed/capsule/", {"token": tokens["embed"]}).status_code == 200


def test_embed_state_answers_json_503(redis_refused, tokens):
    response = client().get("/embed/state", {"token": tokens["embed"]})
    body = assert_json_outage(response)
    assert response["Access-Control-Allow-Origin"] == "*", "readable by the embedding page"
    assert set(body) == {"error", "message"}
    assert body["error"] == "unavailable"


def test_embed_state_by_session_answers_json_503(user, redis_refused):
    c = client()
    c.force_login(user)
    body = assert_json_outage(c.get("/embed/state"))
    assert body["error"] == "unavailable"


def test_embed_capsule_page_answers_the_styled_503_page_and_stays_frameable(redis_refused, tokens):
    response = client().get("/embed/capsule/", {"token": tokens["embed"]})
    assert_page_outage(response)
    assert "frame-ancestors *" in response["Content-Security-Policy"]
    assert "X-Frame-Options" not in response


@pytest.mark.django_db(transaction=True)
def test_sign_in_is_never_an_html_500(redis_refused, user):
    """Signing in writes (``last_login``) and then touches the cache: either the
    committed sign-in stands (a redirect), or the styled 503 page; never a 500."""
    response = client().post("/login/", {"username": "ada", "password": "correct horse battery"})
    if response.status_code != 302:
        assert_page_outage(response)
        assert "default-src 'self'" in response["Content-Security-Policy"]


def test_settings_page_answers_the_styled_503_page(redis_refused, user):
    c = client()
    c.force_login(user)
    assert_page_outage(c.get("/"))


def test_api_answers_json_503(redis_refused, tokens):
    c = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['api']}", raise_request_exception=False)
    body = assert_json_outage(c.post("/api/v1/verdict", "{}", content_type="application/json"))
    assert body["error"] == "unavailable"
