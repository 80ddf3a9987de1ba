"""Creating and revoking bearer tokens (API and read-only embed)."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from curfew_core import events
from curfew_core.cache import drop_token_on_commit
from curfew_core.models import ApiToken
from curfew_core.selectors.tokens import digest

_PREFIX = {ApiToken.Kind.API: "cfw_", ApiToken.Kind.EMBED: "cfe_"}


@transaction.atomic
def token_create(
    *, user: User, name: str = "", kind: str = ApiToken.Kind.API
) -> tuple[ApiToken, str]:
    """A new token and its raw value, which is never stored and shown only once."""
    raw = _PREFIX[ApiToken.Kind(kind)] + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, kind=kind, name=name[:100], prefix=raw[:12], digest=digest(raw)
    )
    drop_token_on_commit(token.digest)
    return token, raw


@transaction.atomic
def token_revoke(*, user: User, token_id: int) -> bool:
    """Revoke one of the user's own tokens; ``False`` if there is no such live token."""
    token = (
        ApiToken.objects.select_for_update()
        .filter(id=token_id, user=user, revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return False
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    drop_token_on_commit(token.digest)
    # Open capsules re-check their embed token on every push: a revoked one is closed now.
    events.user_changed(user.pk)
    return True
