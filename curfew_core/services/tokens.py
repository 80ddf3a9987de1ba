"""Creating and revoking bearer tokens (API and read-only embed)."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from curfew_core.models import ApiToken, AuditEntry, Team
from curfew_core.selectors.tokens import PREFIXES, digest
from curfew_core.services.after_commit import after_commit
from curfew_core.services.audit import audit_record


def token_mint(
    *, user: User, kind: str, name: str, team: Team | None = None
) -> tuple[ApiToken, str]:
    """A new token row and its raw value, which is never stored: only its
    digest and displayed prefix are. Inside the caller's transaction, which
    audits it (``audited``); a person's own tokens and a team's keys are made
    here alike."""
    raw = PREFIXES[ApiToken.Kind(kind)] + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, kind=kind, team=team, name=name[:100], prefix=raw[:12], digest=digest(raw)
    )
    # A garbage lookup may have cached this digest as unknown.
    after_commit(user_id=user.pk, token_digests=[token.digest], refresh=False, publish=False)
    return token, raw


def audited(token: ApiToken) -> dict[str, str]:
    """What an audit entry keeps of a token: its kind, name and displayed
    prefix, never the raw token or its digest."""
    return {"kind": token.kind, "name": token.name, "prefix": token.prefix}


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str = "",
    kind: str = ApiToken.Kind.API,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> tuple[ApiToken, str]:
    """A new token and its raw value, which is never stored and shown only once."""
    if ApiToken.Kind(kind) == ApiToken.Kind.TEAM:
        # A key with no team would ask for nobody: ``services.teams`` makes those.
        raise ValueError("a team key is made by team_token_create, with its team")
    token, raw = token_mint(user=user, kind=kind, name=name)
    _audit(user, token, "created", actor=actor, channel=channel)
    return token, raw


@transaction.atomic
def token_revoke(
    *,
    user: User,
    token_id: int,
    actor: User | None = None,
    channel: str = AuditEntry.Channel.SYSTEM,
) -> bool:
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
    _audit(user, token, "revoked", actor=actor, channel=channel)
    # Open capsules re-check their embed token on every push: a revoked one is closed now.
    after_commit(user_id=user.pk, token_digests=[token.digest], refresh=False)
    return True


def _audit(user: User, token: ApiToken, action: str, *, actor: User | None, channel: str) -> None:
    audit_record(
        user=user,
        actor=actor,
        channel=channel,
        subject=AuditEntry.Subject.TOKEN,
        action=action,
        changes=audited(token),
    )
