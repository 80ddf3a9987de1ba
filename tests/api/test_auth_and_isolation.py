"""Bearer tokens: missing, wrong, revoked (and the cached copy with it), embed
tokens kept out of the API, and one user never touching another's data."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.selectors import tokens
from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client
from tests.api.conftest import stored

ENDPOINTS = [
    ("post", "/api/v1/verdict", {}),
    ("get", "/api/v1/schedule", None),
    ("patch", "/api/v1/schedule", {"curve": "step"}),
    ("post", "/api/v1/overrides", {"off": True}),
    ("get", "/api/v1/state", None),
]


def call(client: Client, method: str, path: str, body: Any) -> Any:
    if method == "get":
        return client.get(path)
    return getattr(client, method)(path, body, content_type="application/json")


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def assert_unauthorized(response: Any) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    body = response.json()
    assert body["error"] == "unauthorized"
    assert body["message"]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_missing_token_is_401(user: User, method: str, path: str, body: Any) -> None:
    before = stored(user)
    response = call(Client(), method, path, body)
    assert_unauthorized(response)
    assert "missing" in response.json()["message"]
    assert stored(user) == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [
        "Bearer cfw_not-a-real-token",
        "Bearer ",
        "Basic YWRhOmNvcnJlY3QgaG9yc2U=",
        "cfw_without_a_scheme",
        "Bearer " + "x" * 500,
    ],
)
@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_wrong_token_is_401(user: User, header: str, method: str, path: str, body: Any) -> None:
    response = call(Client(HTTP_AUTHORIZATION=header), method, path, body)
    assert_unauthorized(response)


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_bearer_requests_need_no_csrf_token(api: Any, method: str, path: str, body: Any) -> None:
    """A gateway is not a browser: the bearer header is the proof, not a cookie."""
    strict = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {api.token}")
    assert call(strict, method, path, body).status_code == 200


@pytest.mark.django_db
def test_a_session_login_is_not_an_api_token(user: User) -> None:
    client = Client()
    client.force_login(user)
    assert_unauthorized(client.get("/api/v1/state"))


@pytest.mark.django_db(transaction=True)
def test_revoked_token_stops_working_even_when_cached(user: User) -> None:
    token, raw = token_create(user=user, name="laptop")
    _, other_raw = token_create(user=user, name="phone")
    client = bearer(raw)
    assert client.get("/api/v1/state").status_code == 200  # now cached
    assert client.get("/api/v1/state").status_code == 200

    assert token_revoke(user=user, token_id=token.pk) is True
    assert_unauthorized(client.get("/api/v1/state"))
    assert "revoked" in client.get("/api/v1/state").json()["message"]
    # Control: the user's other token was not touched.
    assert bearer(other_raw).get("/api/v1/state").status_code == 200
    assert token_revoke(user=user, token_id=token.pk) is False  # already revoked


@pytest.mark.django_db(transaction=True)
def test_a_token_revoked_outside_the_service_stops_working_too(user: User) -> None:
    """Staff revoke tokens in the admin (a plain model save); the cache must follow."""
    token, raw = token_create(user=user)
    assert bearer(raw).get("/api/v1/state").status_code == 200
    from django.utils import timezone

    token.revoked_at = timezone.now()
    token.save()
    assert_unauthorized(bearer(raw).get("/api/v1/state"))


@pytest.mark.django_db(transaction=True)
def test_a_deleted_users_cached_token_stops_working(user: User) -> None:
    _, raw = token_create(user=user)
    assert bearer(raw).get("/api/v1/state").status_code == 200
    user.delete()
    assert_unauthorized(bearer(raw).get("/api/v1/state"))
    assert_unauthorized(bearer(raw).patch("/api/v1/schedule", "{}", "application/json"))


@pytest.mark.django_db(transaction=True)
def test_a_deactivated_users_cached_token_stops_working(user: User) -> None:
    _, raw = token_create(user=user)
    assert bearer(raw).get("/api/v1/state").status_code == 200  # cached now
    user.is_active = False
    user.save()
    assert_unauthorized(bearer(raw).get("/api/v1/state"))
    user.is_active = True
    user.save()
    assert bearer(raw).get("/api/v1/state").status_code == 200


@pytest.mark.django_db
def test_one_user_cannot_revoke_anothers_token(user: User, other_user: User) -> None:
    token, raw = token_create(user=other_user)
    assert token_revoke(user=user, token_id=token.pk) is False
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None
    assert bearer(raw).get("/api/v1/state").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_embed_token_is_refused_by_the_api(user: User, method: str, path: str, body: Any) -> None:
    _, raw = token_create(user=user, kind=ApiToken.Kind.EMBED)
    before = stored(user)
    assert_unauthorized(call(bearer(raw), method, path, body))
    assert stored(user) == before


@pytest.mark.django_db
def test_the_api_token_of_the_same_user_is_accepted(user: User) -> None:
    """Control for the embed refusal: same user, API kind."""
    _, raw = token_create(user=user, kind=ApiToken.Kind.API)
    assert bearer(raw).get("/api/v1/state").status_code == 200


@pytest.mark.django_db
def test_raw_tokens_are_not_stored(user: User) -> None:
    token, raw = token_create(user=user)
    assert raw.startswith("cfw_")
    row = ApiToken.objects.get(pk=token.pk)
    assert raw not in (row.digest, row.prefix, row.name)
    assert len(row.digest) == 64


@pytest.mark.django_db
def test_use_is_stamped(api: Any) -> None:
    assert ApiToken.objects.get(user=api.user).last_used_at is None
    api.get("/api/v1/state")
    # Written in batches (issue 40): the test writes the batch now.
    assert tokens.flush_used() == 1
    assert ApiToken.objects.get(user=api.user).last_used_at is not None


# -- isolation ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_patch_changes_only_the_callers_schedule(api: Any, other_api: Any) -> None:
    mine = api.patch("/api/v1/schedule", {"curve": "step", "lights_out": "03:30"})
    assert mine.status_code == 200
    theirs_before = stored(other_api.user)
    theirs = other_api.patch("/api/v1/schedule", {"wake_up": "07:00"})
    assert theirs.status_code == 200
    assert stored(other_api.user) != theirs_before

    mine_now = api.get("/api/v1/schedule").json()
    theirs_now = other_api.get("/api/v1/schedule").json()
    assert (mine_now["curve"], mine_now["lights_out"], mine_now["wake_up"]) == (
        "step",
        "03:30",
        "09:00",
    )
    assert (theirs_now["curve"], theirs_now["lights_out"], theirs_now["wake_up"]) == (
        "linear",
        "03:00",
        "07:00",
    )


@pytest.mark.django_db
def test_a_patch_by_one_user_leaves_the_other_unchanged(api: Any, other_api: Any) -> None:
    other_api.patch("/api/v1/schedule", {"off_duty_reply": "grace's reply"})
    before = stored(other_api.user)
    theirs = other_api.get("/api/v1/schedule").json()
    api.patch("/api/v1/schedule", {"off_duty_reply": "ada's reply", "enabled": False})
    api.post("/api/v1/overrides", {"off": True})
    assert stored(other_api.user) == before
    assert other_api.get("/api/v1/schedule").json() == theirs
    peak = {"at": "2026-09-29T10:00:00+08:00"}
    assert other_api.post("/api/v1/verdict", peak).json()["reply"] == "grace's reply"
    assert api.post("/api/v1/verdict", peak).json()["state"] == "on-duty"  # ada disabled hers


@pytest.mark.django_db(transaction=True)
def test_overrides_belong_to_their_user(api: Any, other_api: Any) -> None:
    assert api.post("/api/v1/overrides", {"off": True}).json()["forced"] is True
    assert other_api.get("/api/v1/state").json()["forced"] is False
    assert stored(other_api.user)["override"] is None
    other_api.post("/api/v1/overrides", {"debug": "2026-09-30 03:10"})
    assert api.get("/api/v1/state").json()["debug_at"] is None


@pytest.mark.django_db
def test_versions_are_per_user(api: Any, other_api: Any) -> None:
    """A version number from one user's schedule does not open another's."""
    for _ in range(3):
        api.patch("/api/v1/schedule", {"curve": "step"})
        api.patch("/api/v1/schedule", {"curve": "linear"})
    version = api.get("/api/v1/schedule").json()["version"]
    response = other_api.patch("/api/v1/schedule", {"curve": "step", "version": version})
    assert response.status_code == 409
    assert other_api.get("/api/v1/schedule").json()["curve"] == "linear"


@pytest.mark.django_db
def test_storage_down_is_a_json_503_not_an_html_500(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway's outage policy needs a machine-readable answer."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    def down(*args: Any) -> Any:
        raise RedisConnectionError("connection refused")

    assert api.post("/api/v1/verdict", {}).status_code == 200  # control
    # Where every door gets the user's rows (cold or warm, from either door).
    monkeypatch.setattr("curfew_core.selectors.bundles._built_from", down)
    response = api.post("/api/v1/verdict", {})
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"] == "unavailable"


@pytest.mark.django_db
def test_a_failed_last_use_stamp_does_not_fail_the_verdict(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import DatabaseError
    from django.db.models import QuerySet

    def broken_update(self: Any, **kwargs: Any) -> int:
        raise DatabaseError("database is down")

    monkeypatch.setattr(QuerySet, "update", broken_update)
    assert api.post("/api/v1/verdict", {}).status_code == 200
