"""Reading user accounts (Django's own ``User``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError


def user_by_name(username: str) -> User | None:
    return User.objects.filter(username=username).first()


def user_by_id(user_id: int) -> User:
    """The account behind a live token (its check has just found it)."""
    return User.objects.get(pk=user_id)


def active_among(*, user_ids: list[int]) -> set[int]:
    """Which of ``user_ids`` exist and are active (one query, never cached)."""
    return set(User.objects.filter(pk__in=user_ids, is_active=True).values_list("pk", flat=True))


def is_username(name: str) -> bool:
    """Whether ``name`` could be anyone's username, by the rule every account
    is made under: the user model's own ``username`` field (its validators
    and length, which sign-up's form runs too). Not a second rule."""
    field = get_user_model()._meta.get_field("username")
    try:
        field.run_validators(name)
    except ValidationError:
        return False
    return True
