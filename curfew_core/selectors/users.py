"""Reading user accounts (Django's own ``User``)."""

from __future__ import annotations

import threading
from functools import lru_cache

from cachetools import TTLCache
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError


def user_by_name(username: str) -> User | None:
    return User.objects.filter(username=username).first()


def user_by_id(user_id: int) -> User:
    """The account behind a live token (its check has just found it)."""
    return User.objects.get(pk=user_id)


#: Usernames by id, read lately (a personal token naming its own person in
#: ``X-Curfew-User`` on every call, ``edge.own_name``): bounded, and a rename
#: is seen within a minute.
_names: TTLCache[int, str] = TTLCache(maxsize=10_000, ttl=60)
_names_lock = threading.Lock()


def username_of(user_id: int) -> str:
    """The username of a live token's account (kept a minute)."""
    with _names_lock:
        name = _names.get(user_id)
    if name is None:
        found = User.objects.filter(pk=user_id).values_list("username", flat=True).first()
        name = found or ""
        if found is not None:
            with _names_lock:
                _names[user_id] = name
    return name


def forget_names() -> None:
    """Forget the usernames read (tests)."""
    with _names_lock:
        _names.clear()
    _judged_kept.cache_clear()


def active_among(*, user_ids: list[int]) -> set[int]:
    """Which of ``user_ids`` exist and are active (one query, never cached)."""
    return set(User.objects.filter(pk__in=user_ids, is_active=True).values_list("pk", flat=True))


def is_username(name: str) -> bool:
    """Whether ``name`` could be anyone's username, by the rule every account
    is made under: the user model's own ``username`` field (its validators
    and length, which sign-up's form runs too). Not a second rule.

    Remembered per name (``_NAMES_JUDGED``, least recently used): a team key
    names its member on every call, and running the field's validators (a
    regular expression, a length check, Django's field lookup) was a tenth of
    a team key's warm verdict. A name longer than the field allows is judged
    each time, never kept (no client fills the memory with long names)."""
    if len(name) > _LONGEST_JUDGED:
        return _judged(name)
    return _judged_kept(name)


#: Names judged and kept (``is_username``): a team's members, and a few more.
_NAMES_JUDGED = 50_000
#: Longer names are not kept (the default user model allows 150 characters).
_LONGEST_JUDGED = 150


def _judged(name: str) -> bool:
    field = get_user_model()._meta.get_field("username")
    try:
        field.run_validators(name)
    except ValidationError:
        return False
    return True


_judged_kept = lru_cache(maxsize=_NAMES_JUDGED)(_judged)
