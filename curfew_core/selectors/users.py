"""Reading user accounts (Django's own ``User``)."""

from __future__ import annotations

from django.contrib.auth.models import User


def user_by_name(username: str) -> User | None:
    return User.objects.filter(username=username).first()


def user_by_id(user_id: int) -> User:
    """The account behind a live token (its check has just found it)."""
    return User.objects.get(pk=user_id)


def user_is_active(*, user_id: int) -> bool:
    """Whether the user exists and is active (read from the database, never cached)."""
    return User.objects.filter(pk=user_id, is_active=True).exists()
