"""A token changed by any channel stops (or starts) working now.

The services forget a token's cached check themselves after their commits;
these receivers cover the writes that bypass them: the admin, a deleted
user's cascade, a user deactivated or reactivated anywhere. Connected in
``CurfewCoreConfig.ready`` (models import no service: the receivers live
with the writes they stand for).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.signals import post_delete, post_save

from curfew_core.models import ApiToken
from curfew_core.services.after_commit import after_commit


def _forget_tokens_after_commit(user_id: int, digests: list[str]) -> None:
    after_commit(user_id=user_id, token_digests=digests, refresh=False, publish=False)


def _forget_cached_token(sender: type[ApiToken], instance: ApiToken, **kwargs: Any) -> None:
    """A token revoked or deleted by any channel (the admin, a deleted user's
    cascade) must stop working now, not when its cache entry expires."""
    _forget_tokens_after_commit(instance.user_id, [instance.digest])


def _forget_tokens_of_changed_user(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """A deactivated user's tokens stop working now (and a reactivated user's
    work again), not when the cache entry expires."""
    digests = list(ApiToken.objects.filter(user=instance).values_list("digest", flat=True))
    if digests:
        _forget_tokens_after_commit(instance.pk, digests)


def connect() -> None:
    post_save.connect(_forget_cached_token, sender=ApiToken, dispatch_uid="curfew-token-saved")
    post_delete.connect(_forget_cached_token, sender=ApiToken, dispatch_uid="curfew-token-deleted")
    post_save.connect(
        _forget_tokens_of_changed_user,
        sender=settings.AUTH_USER_MODEL,
        dispatch_uid="curfew-token-user-saved",
    )
