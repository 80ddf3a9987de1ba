"""Reading a person's own account: their preferences and their open sessions."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.base import SessionBase
from django.utils import timezone
from django.utils.module_loading import import_string

from curfew_core.models import AccountPreference


def preferred_language(user: User) -> str:
    """The language the person chose (a code of ``settings.LANGUAGES``), or ``""``."""
    chosen = AccountPreference.objects.filter(user=user).values_list("language", flat=True).first()
    return chosen if chosen in dict(settings.LANGUAGES) else ""


def session_store_class() -> type[SessionBase]:
    store: type[SessionBase] = import_string(settings.SESSION_ENGINE).SessionStore
    return store


def session_keys_of(user: User) -> list[str]:
    """The keys of every unexpired session that signs ``user`` in.

    Sessions are rows (Django's database-backed engine, the default): each one
    is decoded to see whose it is. Keys are secrets: callers never log them.
    """
    store = session_store_class()
    get_model = getattr(store, "get_model_class", None)
    if get_model is None:
        raise NotImplementedError(
            f"{settings.SESSION_ENGINE} keeps no rows to list; use a database-backed session engine"
        )
    wanted = str(user.pk)
    keys = []
    for row in get_model().objects.filter(expire_date__gt=timezone.now()).iterator():
        if str(store().decode(row.session_data).get(SESSION_KEY)) == wanted:
            keys.append(row.session_key)
    return keys
