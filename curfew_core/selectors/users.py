"""Reading user accounts (Django's own ``User``)."""

from __future__ import annotations

from django.contrib.auth.models import User


def user_by_name(username: str) -> User | None:
    return User.objects.filter(username=username).first()


def user_by_id(user_id: int) -> User:
    """The account behind a live token (its check has just found it)."""
    return User.objects.get(pk=user_id)


def active_among(*, user_ids: list[int]) -> set[int]:
    """Which of ``user_ids`` exist and are active (one query, never cached)."""
    return set(User.objects.filter(pk__in=user_ids, is_active=True).values_list("pk", flat=True))
