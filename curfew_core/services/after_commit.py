"""What happens after a committed write: one function, its steps in order.

A committed write is a success. Nothing here may turn it into an error: each
step catches and logs its own failure and the next step still runs, and the
whole is registered with ``on_commit(..., robust=True)`` besides. A step that
fails (Redis refused or stalled the write) or never runs (the process was
killed right after the commit) hides nothing for long: cached entries are
re-read once older than ``CURFEW_CACHE_FRESH_SECONDS`` (see ``curfew_core.store.cache_policy``).

Every write of a row a verdict reads comes here, whoever made it: the services
call ``after_commit`` themselves, and the model signals
(``services.cache_receivers``) call it for a save or delete made any other way
(the admin, a shell, a management command, a cascade). Within one transaction
a user's steps are registered once (``on_commit_once``): a service's save and
the signal its ``save()`` sends do not refresh twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any

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
    digests = tuple(sorted(set(token_digests)))

    # A named function, not a ``partial``: Django's robust logging reads its
    # ``__qualname__``.
    def steps() -> None:
        run_after_commit(user_id, token_digests=digests, refresh=refresh, publish=publish)

    def covers(pending: Hashable) -> bool:
        """Whether steps already registered do all of these."""
        if not (
            isinstance(pending, tuple) and len(pending) == 5 and pending[:2] == ("user", user_id)
        ):
            return False
        _, _, their_digests, their_refresh, their_publish = pending
        return (
            set(digests) <= set(their_digests)
            and (their_refresh or not refresh)
            and (their_publish or not publish)
        )

    on_commit_once(("user", user_id, digests, refresh, publish), steps, covers=covers)


#: The attributes naming what a function registered by ``on_commit_once`` does,
#: and the transaction it was registered in.
_ONCE = "curfew_after_commit"
_ONCE_IN = "curfew_after_commit_in"


def on_commit_once(
    key: Hashable, steps: Callable[[], None], *, covers: Callable[[Hashable], bool] | None = None
) -> None:
    """``on_commit(steps, robust=True)``, unless steps registered earlier in
    the same transaction already do the same (``covers(their key)``, by default
    equal keys). Those run whenever these would: a callback still pending was
    registered inside savepoints that are either released (never rolled back
    now) or still open, and these would be registered inside every savepoint
    open now, so a rollback that drops those drops these too. The same
    transaction: the same outermost ``atomic`` block, not counting a test
    case's own (a test's ``captureOnCommitCallbacks`` runs only what was
    registered inside it). Outside a transaction, at once, as ``on_commit``."""
    connection: Any = transaction.get_connection()
    if connection.in_atomic_block:
        outermost = _transaction_of(connection)
        if outermost is not None:
            same = covers or (lambda pending: pending == key)
            for entry in connection.run_on_commit:
                function = entry[1]
                if getattr(function, _ONCE_IN, None) == outermost and same(
                    getattr(function, _ONCE, None)
                ):
                    return
            setattr(steps, _ONCE_IN, outermost)
    setattr(steps, _ONCE, key)
    transaction.on_commit(steps, robust=True)


def _transaction_of(connection: Any) -> tuple[int, Any] | None:
    """The outermost ``atomic`` block open now that is not a test case's, as
    (its place, its savepoint): a block used as a decorator is one object for
    every call, so its savepoint (each one's own name; none for a transaction's
    outermost block, whose callbacks go at its end) tells one use from the
    next. ``None`` if only a test case's are open."""
    for place, block in enumerate(connection.atomic_blocks):
        if not block._from_testcase:
            savepoint = connection.savepoint_ids[place - 1] if place else None
            return (id(block), savepoint)
    return None
