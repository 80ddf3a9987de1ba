"""A user's schedule and overrides as the engine needs them, cached.

The verdict hot path must not touch the database once warm: the raw rows live
in Django's cache (replaced after every committed write, see ``curfew_core.cache``),
and the built engine ``Schedule`` is kept per process, keyed by the row versions
it was built from.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from curfew_core import config as schedule_config
from curfew_core.cache import bundle_key, lifetime
from curfew_core.engine import Overrides, Schedule
from curfew_core.models import UNSAVED_VERSION, Override
from curfew_core.models import Schedule as ScheduleRow


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
    row = ScheduleRow.objects.filter(user_id=user_id).only("config", "version").first()
    override = Override.objects.filter(user_id=user_id).first()
    return {
        "version": row.version if row else UNSAVED_VERSION,
        "config": schedule_config.with_defaults(row.config if row else {}),
        "overtime_until": override.overtime_until if override else None,
        "forced_off_until": override.forced_off_until if override else None,
        "debug_at": override.debug_at if override else None,
    }


def bundle_for(user_id: int) -> UserBundle:
    """The user's schedule (defaults if never saved) and overrides."""
    key = bundle_key(user_id)
    raw = cache.get(key)
    if raw is None:
        raw = _load_raw(user_id)
        # ``add``, not ``set``: a writer's fresher entry must win the race.
        cache.add(key, raw, timeout=lifetime(settings.CURFEW_SCHEDULE_CACHE_SECONDS))
    stamp = (
        raw["version"],
        raw["overtime_until"],
        raw["forced_off_until"],
        raw["debug_at"],
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
            overtime_until=raw["overtime_until"],
            forced_off_until=raw["forced_off_until"],
            debug_at=raw["debug_at"],
        ),
    )
    with _built_lock:
        if len(_built) >= MAX_BUILT:
            _built.clear()
        _built[user_id] = (stamp, built)
    return built


def refresh_bundle_on_commit(user_id: int) -> None:
    """After the caller's commit, put the committed rows in the shared cache.

    Every process sharing the cache then sees the change on its next verdict;
    the per-process memo follows because the rows' stamp changed.
    """

    def refresh() -> None:
        cache.set(
            bundle_key(user_id),
            _load_raw(user_id),
            timeout=lifetime(settings.CURFEW_SCHEDULE_CACHE_SECONDS),
        )

    transaction.on_commit(refresh)


def overrides_active(bundle: UserBundle, now: datetime) -> dict[str, Any]:
    o = bundle.overrides
    return {
        "overtime_until": o.overtime_until if o.overtime_until and o.overtime_until > now else None,
        "forced_off_until": o.forced_off_until
        if o.forced_off_until and o.forced_off_until > now
        else None,
        "debug_at": o.debug_at,
    }
