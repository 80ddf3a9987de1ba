"""What happens after a committed write: one function, its steps in order.

A committed write is a success. Nothing here may turn it into an error: each
step catches and logs its own failure and the next step still runs, and the
whole is registered with ``on_commit(..., robust=True)`` besides. A step that
fails (Redis refused or stalled the write) or never runs (the process was
killed right after the commit) hides nothing for long: cached entries are
re-read once older than ``CURFEW_CACHE_FRESH_SECONDS`` (see ``curfew_core.store.cache_policy``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction

from curfew_core.selectors.bundles import bundle_for, refresh_bundle
from curfew_core.selectors.users import user_by_id
from curfew_core.services import events
from curfew_core.store.cache_policy import forget, token_key

log = logging.getLogger("curfew.after_commit")


def run_after_commit(
    user_id: int, *, token_digests: tuple[str, ...], refresh: bool, publish: bool
) -> None:
    """The after-commit steps, in this order:

    1. Forget the cached checks of changed tokens, so a revoked token is
       refused from now on.
    2. Refresh the user's cached schedule and overrides with the committed rows
       (if the cache refuses, drop the entry; if it refuses that too, the entry
       goes stale within the freshness bound).
    3. Publish "user changed" to open capsules. Last, because a capsule that
       hears it re-reads at once, through the cache steps 1 and 2 just renewed
       (and re-checks its embed token, so a revoked one is closed).
    """
    for token_digest in token_digests:
        forget(token_key(token_digest))
    if refresh:
        try:
            refresh_bundle(user_id)
        except Exception:  # the commit stands; the entry goes stale within the bound
            log.exception("after commit: could not refresh the cache of user %s", user_id)
    if publish:
        try:
            events.publish_user_changed(user_id)
        except Exception:  # capsules re-sync at their next boundary or reconnect
            log.exception("after commit: could not publish the change of user %s", user_id)
        _publish_to_team(user_id)


def _publish_to_team(user_id: int) -> None:
    """A team member's change, told to the team key's change streams too (issue 26)."""
    try:
        team_id = bundle_for(user_id).team_id
        if team_id is not None:
            events.publish_member_changed(team_id, user_id, user_by_id(user_id).get_username())
    except Exception:
        log.exception("after commit: could not tell the team of user %s", user_id)


def after_commit(
    *,
    user_id: int,
    token_digests: Iterable[str] = (),
    refresh: bool = True,
    publish: bool = True,
) -> None:
    """Run ``run_after_commit`` once the caller's transaction commits (at once
    outside one); nothing of it runs if the transaction rolls back."""
    digests = tuple(token_digests)

    # A named function, not a ``partial``: Django's robust logging reads its
    # ``__qualname__``.
    def steps() -> None:
        run_after_commit(user_id, token_digests=digests, refresh=refresh, publish=publish)

    transaction.on_commit(steps, robust=True)
