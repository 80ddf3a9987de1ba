"""Creating user accounts: from the command line, and by sign-up where it is on."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from curfew_core.models import AuditEntry
from curfew_core.services.audit import audit_record
from curfew_core.services.schedules import schedule_create_for_new_account


@transaction.atomic
def user_create(*, username: str) -> User:
    """A new user who cannot sign in with a password (tokens only)."""
    user = User.objects.create_user(username=username)
    user.set_unusable_password()
    user.save()
    schedule_create_for_new_account(user=user)
    return user


@transaction.atomic
def demo_user_ensure(*, username: str, password: str) -> tuple[User, bool]:
    """The demo user, made if missing; the password is set only if it has none.

    Returns the user and whether ``password`` is now theirs (a password they
    changed themselves is kept).
    """
    user, created = User.objects.get_or_create(username=username)
    if created:
        schedule_create_for_new_account(user=user)
    if created or not user.has_usable_password():
        user.set_password(password)
        user.save()
        return user, True
    return user, False


@transaction.atomic
def user_sign_up(*, username: str, password: str) -> User:
    """A person signing themselves up (only where ``CURFEW_SIGNUP`` is on);
    the caller's form has validated the name and the password."""
    user = User.objects.create_user(username=username, password=password)
    schedule_create_for_new_account(user=user)
    audit_record(
        user=user,
        actor=user,
        channel=AuditEntry.Channel.PAGE,
        subject=AuditEntry.Subject.ACCOUNT,
        action="signed up",
        changes={"username": username},
    )
    return user
