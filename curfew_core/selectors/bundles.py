"""A user's schedule and overrides as the engine needs them, cached.

The verdict hot path must not touch the database once warm: the raw rows live
in Django's cache (replaced after every committed write, re-read once older
than the freshness bound, see ``curfew_core.store.cache_policy``), and the built engine
``Schedule`` is kept per process, keyed by the row versions it was built from.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError

from curfew_core import models
from curfew_core.engine import OverrideError, Overrides, Schedule
from curfew_core.models import UNSAVED_VERSION, Override
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.override_commands import check_moment
from curfew_core.store import cache_policy
from curfew_core.store.cache_policy import bundle_key, lifetime

log = logging.getLogger("curfew.bundles")


@dataclass(frozen=True, slots=True)
class UserBundle:
    user_id: int
    version: int
    config: dict[str, Any]
    schedule: Schedule
    overrides: Overrides


#: Bounded: a process serving many users rebuilds a cold one in microseconds.
MAX_BUILT = 10_000
_built: dict[int, tuple[tuple[Any, ...], UserBundle]] = {}
_built_lock = threading.Lock()


def _load_raw(user_id: int) -> dict[str, Any]:
    row = models.Schedule.objects.filter(user_id=user_id).only("config", "version").first()
    override = Override.objects.filter(user_id=user_id).first()
    return {
        "version": row.version if row else UNSAVED_VERSION,
        "config": schedule_config.with_defaults(row.config if row else {}),
        "overtime_until": override.overtime_until if override else None,
        "forced_off_until": override.forced_off_until if override else None,
        "debug_at": override.debug_at if override else None,
        "debug_until": override.debug_until if override else None,
        "loaded_at": cache_policy.clock(),
    }


def _keep_seconds() -> int:
    return lifetime(settings.CURFEW_SCHEDULE_CACHE_SECONDS)


def _raw(user_id: int) -> dict[str, Any]:
    """The user's rows: cached, re-read once older than the freshness bound."""
    key = bundle_key(user_id)
    raw: dict[str, Any] | None = cache.get(key)
    if raw is None:
        raw = _load_raw(user_id)
        # ``add``, not ``set``: a writer's fresher entry must win the race.
        cache.add(key, raw, timeout=_keep_seconds())
    elif not cache_policy.fresh(raw.get("loaded_at", 0.0)):
        try:
            raw = _load_raw(user_id)
        except DatabaseError:
            # Nothing can have been committed to a database we cannot read:
            # the last known rows are still the truth. Keep answering.
            log.warning("database unreachable; serving user %s's last known schedule", user_id)
            return raw
        cache.set(key, raw, timeout=_keep_seconds())
    return raw


def _in_range(user_id: int, name: str, instant: datetime | None) -> datetime | None:
    """A stored override moment, or ``None`` if the engine cannot work with it.

    The services never store such a moment (``check_moment``); one written
    around them (an old admin edit, a shell) must not fail every verdict of
    its user: it is ignored, loudly.
    """
    if instant is None:
        return None
    try:
        return check_moment(instant)
    except OverrideError:
        log.error("user %s: ignoring stored %s %s, out of range", user_id, name, instant)
        return None


def bundle_for(user_id: int) -> UserBundle:
    """The user's schedule (defaults if never saved) and overrides."""
    return _built_from(user_id, _raw(user_id))


def cached_bundle(user_id: int, raw: dict[str, Any] | None) -> UserBundle | None:
    """``bundle_for`` from the rows already read from the cache
    (``cache_policy.bundle_key``'s value), or ``None`` if they must be read
    again (absent, or older than the freshness bound): then ``bundle_for``."""
    if not rows_fresh(raw):
        return None
    assert raw is not None
    return _built_from(user_id, raw)


def rows_fresh(raw: dict[str, Any] | None) -> bool:
    """Whether cached rows (``cache_policy.bundle_key``'s value) may be used as they are."""
    return raw is not None and cache_policy.fresh(raw.get("loaded_at", 0.0))


def _built_from(user_id: int, raw: dict[str, Any]) -> UserBundle:
    stamp = (
        raw["version"],
        raw["overtime_until"],
        raw["forced_off_until"],
        raw["debug_at"],
        # ``get``: an entry cached before the time machine had an end.
        raw.get("debug_until"),
    )
    hit = _built.get(user_id)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    built = UserBundle(
        user_id=user_id,
        version=raw["version"],
        config=raw["config"],
        schedule=schedule_config.build(raw["config"]),
        overrides=Overrides(
            overtime_until=_in_range(user_id, "overtime_until", raw["overtime_until"]),
            forced_off_until=_in_range(user_id, "forced_off_until", raw["forced_off_until"]),
            debug_at=_in_range(user_id, "debug_at", raw["debug_at"]),
            debug_until=raw.get("debug_until"),
        ),
    )
    with _built_lock:
        if len(_built) >= MAX_BUILT:
            _built.clear()
        _built[user_id] = (stamp, built)
    return built


def refresh_bundle(user_id: int) -> None:
    """Put the committed rows in the shared cache (call only after the commit).

    Every process sharing the cache then sees the change on its next verdict;
    the per-process memo follows because the rows' stamp changed. If the cache
    refuses the write, the entry is dropped instead; if it refuses that too,
    the old entry goes stale within the freshness bound. Never raises.
    """
    key = bundle_key(user_id)
    try:
        rows = _load_raw(user_id)
    except DatabaseError:
        # Readers would keep the old entry as "last known" while the database
        # is unreachable; it no longer is the truth, so it goes.
        log.warning("could not re-read user %s after commit", user_id, exc_info=True)
        cache_policy.forget(key)
        return
    try:
        cache.set(key, rows, timeout=_keep_seconds())
    except Exception:
        log.warning("could not refresh cached schedule of user %s", user_id, exc_info=True)
        cache_policy.forget(key)


def committed_schedule(user_id: int) -> dict[str, Any]:
    """The user's settings and version as committed (not the cache): what a
    client reads before a versioned PATCH must be what the stale check sees."""
    row = models.Schedule.objects.filter(user_id=user_id).only("config", "version").first()
    config = schedule_config.with_defaults(row.config if row else {})
    return {**config, "version": row.version if row else UNSAVED_VERSION}


def overrides_active(bundle: UserBundle, now: datetime) -> dict[str, Any]:
    """The overrides still in force at the real ``now`` (an expired one is ``None``)."""
    o = bundle.overrides
    debug_at = o.debug_at_now(now)
    return {
        "overtime_until": o.overtime_until if o.overtime_until and o.overtime_until > now else None,
        "forced_off_until": o.forced_off_until
        if o.forced_off_until and o.forced_off_until > now
        else None,
        "debug_at": debug_at,
        "debug_until": o.debug_until if debug_at is not None else None,
    }
