"""Token checks trust a cached "live and active" only for a short bound.

Issue 9, item 11: ``User.objects.filter(...).update(is_active=False)`` sends
no signal, so nothing drops the cached token entries; they used to answer
for the cache entry's lifetime (an hour on Redis). Whatever path deactivated
the user or revoked the token, the check re-reads the database within the
bound (``CURFEW_CACHE_FRESH_SECONDS``; 1 s here).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError
from django.utils import timezone

from curfew_core.models import ApiToken
from tests.api.test_cache_after_commit import BOUND, Wall, refusing_cache, wall
from tests.conftest import ApiClient

__all__ = ["refusing_cache", "wall"]  # fixtures, shared


@pytest.mark.django_db(transaction=True)
def test_a_bulk_deactivated_user_is_refused_within_the_bound(
    api: ApiClient, refusing_cache: None, wall: Wall
) -> None:
    assert api.get("/api/v1/state").status_code == 200  # the token's check is cached
    User.objects.filter(pk=api.user.pk).update(is_active=False)  # no signal, no drop
    wall.advance(BOUND + 0.01)
    assert api.get("/api/v1/state").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_a_token_revoked_by_a_bulk_update_is_refused_within_the_bound(
    api: ApiClient, refusing_cache: None, wall: Wall
) -> None:
    assert api.get("/api/v1/state").status_code == 200
    ApiToken.objects.filter(user=api.user).update(revoked_at=timezone.now())
    wall.advance(BOUND + 0.01)
    assert api.get("/api/v1/state").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_unknown_tokens_are_still_remembered(
    api: ApiClient, refusing_cache: None, django_assert_num_queries: Any
) -> None:
    """Garbage cannot hammer the database: a missing token is cached too."""
    stranger = ApiClient(api.user, "cfw_not-a-real-token")
    assert stranger.get("/api/v1/state").status_code == 401
    with django_assert_num_queries(0):
        assert stranger.get("/api/v1/state").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_with_the_database_down_a_known_token_keeps_answering(
    api: ApiClient, refusing_cache: None, wall: Wall, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound the check re-reads; if the database is unreachable it keeps
    the last known answer (nothing can have been committed meanwhile) rather
    than fail every warm verdict."""
    assert api.post("/api/v1/verdict", {}).status_code == 200
    wall.advance(BOUND + 0.01)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("the database is unreachable")

    # Every read of rows goes through ``_fetch_all`` (``first()``, iterating, values).
    monkeypatch.setattr("django.db.models.query.QuerySet._fetch_all", down)
    monkeypatch.setattr("django.db.models.query.QuerySet.update", down)
    # The cold path's one query, compiled once (``bundles.compiled_rows``).
    monkeypatch.setattr("curfew_core.selectors.bundles.compiled_rows", down)
    assert api.post("/api/v1/verdict", {}).status_code == 200


# -- many tokens at once (a team's capsules pushed together) -----------------------------


def _embed(user: User, name: str) -> str:
    from curfew_core.services.tokens import token_create

    return token_create(user=user, name=name, kind=ApiToken.Kind.EMBED)[1]


@pytest.mark.django_db(transaction=True)
def test_many_stale_tokens_are_checked_again_in_one_query(
    api: ApiClient, refusing_cache: None, wall: Wall, django_assert_num_queries: Any
) -> None:
    from curfew_core.selectors.tokens import identify_many

    raws = [_embed(api.user, f"capsule {n}") for n in range(6)]
    ApiToken.objects.filter(name="capsule 0").update(revoked_at=timezone.now())  # no signal
    first = identify_many(raws, kind="embed")
    assert [first[raw] is not None for raw in raws] == [False, *[True] * 5]
    wall.advance(BOUND + 0.01)
    ApiToken.objects.filter(name="capsule 1").update(revoked_at=timezone.now())
    with django_assert_num_queries(1):  # six stale checks, one query (no stamp: within a minute)
        again = identify_many(raws, kind="embed")
    assert [again[raw] is not None for raw in raws] == [False, False, *[True] * 4]
    with django_assert_num_queries(0):  # and fresh again
        assert identify_many(raws, kind="embed") == again
    assert identify_many(raws, kind="api") == dict.fromkeys(raws)  # the kind counts too


@pytest.mark.django_db(transaction=True)
def test_many_tokens_with_the_database_down_keep_their_last_checks(
    api: ApiClient, refusing_cache: None, wall: Wall, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curfew_core.selectors.tokens import identify_many

    known = [_embed(api.user, f"capsule {n}") for n in range(3)]
    assert all(identify_many(known, kind="embed").values())
    never_checked = _embed(api.user, "new")
    wall.advance(BOUND + 0.01)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("the database is unreachable")

    monkeypatch.setattr("django.db.models.query.QuerySet._fetch_all", down)
    assert all(identify_many(known, kind="embed").values())
    # One never checked cannot be vouched for: the caller hears the outage.
    with pytest.raises(DatabaseError):
        identify_many([*known, never_checked], kind="embed")
