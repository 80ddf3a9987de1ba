"""A warm token check and the user's rows, from the event loop.

The verdict API's lean route (``api.lean``) and the proxy (``proxy.views.judge``)
ask the same thing before every model call: whose live token is this, is it
within its rate, and what are the user's schedule and overrides. When the
answers are in the cache and fresh, :func:`warm_inputs` reads them with one
cache read (``async_cache.get_many``: one ``MGET`` on Redis) and counts the
rate with ``throttle.ahit_token_rate``, with no thread and no database. When
they are not, it says so *before counting anything*, and the caller takes its
sync path (``throttle.identify_throttled`` and ``bundles.bundle_for`` in a
thread), which counts and answers exactly as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from curfew_core import async_cache, throttle
from curfew_core.cache_policy import bundle_key, token_key
from curfew_core.selectors import tokens
from curfew_core.selectors.bundles import UserBundle, bundle_for, cached_bundle
from curfew_core.selectors.tokens import TokenIdentity

#: Runs sync work in a thread the caller chooses (and awaits it).
InThread = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Warm:
    identity: TokenIdentity
    bundle: UserBundle


async def warm_inputs(
    raw: str | None, *, kind: str, in_thread: InThread, count: bool = True
) -> Warm | None:
    """The live token's identity and its user's bundle, or ``None``: take the
    sync path (nothing was counted here then). Raises ``throttle.Throttled``
    when the token is over its rate, ``RedisError`` when the cache is down.

    The user's rows are read in a thread (``in_thread``) only when the token
    is warm but the rows are not; so is the once-a-minute ``last_used_at`` stamp.
    With ``count`` false the rate is not counted: the caller counts it with
    :func:`charge` once it knows it answers the request (the proxy's lean
    route, which hands any call it does not answer to Django's, uncounted).
    """
    if raw is None or len(raw) > tokens.MAX_TOKEN_LENGTH or not async_cache.supported():
        return None
    token_digest = tokens.digest(raw)
    user_id = tokens.likely_user(token_digest)
    keys = [token_key(token_digest)]
    if user_id is not None:
        keys.append(bundle_key(user_id))
    found = await async_cache.get_many(keys)
    if not tokens.usable(found[0]):
        return None
    identity = tokens.cached_identity(token_digest, found[0], kind=kind)
    if identity is None:
        return None  # unknown, revoked or another kind: counted on the sync path
    if tokens.stamp_due(identity.token_id):
        await in_thread(tokens.stamp_used, identity.token_id)
    if count:
        await charge(identity)
    bundle = None
    if user_id == identity.user_id:
        bundle = cached_bundle(identity.user_id, found[1])
    if bundle is None:
        bundle = await in_thread(bundle_for, identity.user_id)
    return Warm(identity, bundle)


async def charge(identity: TokenIdentity) -> None:
    """Count one request against the token's rate (``throttle.Throttled`` past it)."""
    refusal = await throttle.ahit_token_rate(identity.token_id)
    if refusal is not None:
        raise throttle.Throttled(refusal)
