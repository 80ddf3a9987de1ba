"""A person's own account: password, other sessions, language.

Each change is audited (subject ``account``) inside its own transaction, and
never with a secret: no password, no hash, no session key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.dispatch import Signal

from curfew_core.models import AccountPreference, AuditEntry
from curfew_core.selectors.account import session_keys_of, session_store_class
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record

#: Sent after the commit that ended sessions, with ``user_id`` and
#: ``session_keys``: the capsule sockets opened with them close at once
#: (``realtime.signals`` listens; services import no door).
sessions_ended = Signal()


class UnknownLanguage(ValueError):
    """A language code the site does not offer."""


def _audit(
    user: User, actor: User | None, channel: str, action: str, changes: Mapping[str, Any]
) -> None:
    """An account change's audit entry (never a secret in ``changes``)."""
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.ACCOUNT,
        action=action,
        changes=changes,
    )


@transaction.atomic
def password_set(*, user: User, password: str, actor: User | None, channel: str) -> User:
    """Give ``user`` a new password (already validated by the caller's form).

    Saving the user changes their session hash, so every session signed in
    with the old password ends, and their capsule sockets close (4401); the
    caller keeps its own session with ``update_session_auth_hash``.
    """
    user.set_password(password)
    user.save()
    _audit(user, actor, channel, "password changed", {})
    return user


@transaction.atomic
def sessions_end_others(*, user: User, keep: str | None, actor: User | None, channel: str) -> int:
    """End every session of ``user`` but ``keep`` (the caller's own); returns
    how many ended. Their open capsule sockets close with 4401 after the commit."""
    ended = [key for key in session_keys_of(user) if key != keep]
    store = session_store_class()
    for key in ended:
        store(key).delete()
    _audit(user, actor, channel, "signed out other sessions", {"sessions": len(ended)})
    if ended:
        user_id = user.pk
        transaction.on_commit(
            lambda: sessions_ended.send(
                sender=AccountPreference, user_id=user_id, session_keys=tuple(ended)
            ),
            robust=True,
        )
    return len(ended)


@transaction.atomic
def language_set(
    *, user: User, language: str, actor: User | None, channel: str
) -> AccountPreference:
    """Store the person's language (a code of ``settings.LANGUAGES``, or ``""``
    for the browser's own); ``UnknownLanguage`` otherwise, and nothing is written."""
    if language and language not in dict(settings.LANGUAGES):
        raise UnknownLanguage(language)
    preference, _ = AccountPreference.objects.select_for_update().get_or_create(user=user)
    old = preference.language
    if old == language:
        return preference
    preference.language = language
    preference.save(update_fields=["language", "updated_at"])
    _audit(user, actor, channel, "language saved", {"language": {"old": old, "new": language}})
    # A team member's gateway says the team's replies in this language (issue 39).
    after_commit(user_id=user.pk, publish=False)
    return preference
