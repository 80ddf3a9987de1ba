"""A user's schedule and overrides as the engine needs them, cached.

The verdict hot path must not touch the database once warm: the raw rows live
in Django's cache (replaced after every committed write, re-read once older
than the freshness bound, see ``curfew_core.store.cache_policy``), and the built engine
``Schedule`` is kept per process, keyed by the row versions it was built from.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from curfew_core import models
from curfew_core.engine import OverrideError, Overrides, Schedule, TeamPolicy, TeamSide
from curfew_core.models import UNSAVED_VERSION, Team
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules.override_commands import check_moment
from curfew_core.selectors import prepared
from curfew_core.selectors.spoken import spoken_config, spoken_language
from curfew_core.store import cache_policy
from curfew_core.store.cache_policy import bundle_key, lifetime, team_key
from curfew_core.store.memos import LRU
from curfew_core.store.outage_log import Notice

log = logging.getLogger("curfew.bundles")
#: Said once per outage, not per warm verdict answered from the last rows.
_unreadable = Notice(log)


@dataclass(frozen=True, slots=True)
class UserBundle:
    user_id: int
    version: int
    config: dict[str, Any]
    schedule: Schedule
    overrides: Overrides
    #: The member's team (issue 26), or ``None``: the verdict is then the
    #: member's own; with one, the harsher of both (``engine.decide_member``).
    team_id: int | None = None
    team: TeamSide | None = None
    #: When the member last took overtime (see ``TeamMembership.overtime_from``).
    overtime_from: datetime | None = None


#: Bounded: a process serving many users rebuilds a cold one in microseconds.
#: Bounded, least recently used (never emptied whole: 15,000 users in turn
#: emptied it every 10,000 and rebuilt everyone).
MAX_BUILT = 50_000
_built: LRU[int, tuple[tuple[Any, ...], UserBundle]] = LRU(maxsize=MAX_BUILT)
_built_lock = threading.Lock()


#: A user's rows and their team's, as one query reads them from the user's own
#: row (``joined_fields()``) or from a row pointing at the user
#: (``joined_fields("user__")``: a token's): each table is one-to-one with the
#: user, and the team is the membership's, so every join is a LEFT OUTER one
#: and the query yields one row, whatever the user has saved. The cold path of
#: a verdict (issue 40): one query, where it was one per table.
_ROWS = (
    "curfew_schedule__config",
    "curfew_schedule__version",
    "curfew_override__overtime_until",
    "curfew_override__forced_off_until",
    "curfew_override__debug_at",
    "curfew_override__debug_until",
    "curfew_team_membership__team_id",
    "curfew_team_membership__overtime_from",
    "curfew_preference__language",
    "curfew_team_membership__team__version",
    "curfew_team_membership__team__config",
    "curfew_team_membership__team__members_may_exempt",
    "curfew_team_membership__team__member_overtime_minutes",
    "curfew_team_membership__team__overtime_until",
)
NOBODY: tuple[Any, ...] = (None,) * len(_ROWS)


def joined_fields(prefix: str = "") -> tuple[str, ...]:
    """The ``values_list`` names of ``_ROWS``, reached through ``prefix``."""
    return tuple(prefix + name for name in _ROWS)


def rows_from(
    values: Sequence[Any],
    loaded_at: float,
    configs: dict[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A user's cached rows (``bundle_key``'s value) and their team's
    (``team_key``'s, ``None`` in no team) from one row of ``joined_fields``.
    ``configs``: one filled-in copy per distinct stored settings, shared by
    the rows of one read (filling in is a deep copy)."""
    (
        stored,
        version,
        overtime,
        forced,
        debug_at,
        debug_until,
        team_id,
        overtime_from,
        preference,
        team_version,
        team_config,
        members_may_exempt,
        member_overtime_minutes,
        team_overtime,
    ) = values
    if version is None:  # never saved: the defaults
        stored = {}
    if configs is None:
        config = schedule_config.with_defaults(stored)
    else:
        key = json.dumps(stored, sort_keys=True, default=str)
        found = configs.get(key)
        if found is None:
            found = configs[key] = schedule_config.with_defaults(stored)
        config = found
    version = UNSAVED_VERSION if version is None else version
    rows = {
        "team_id": team_id,
        "overtime_from": overtime_from,
        # Only a team member's words depend on it (their team's replies).
        "language": spoken_language(
            (preference or "") if team_id is not None else "", version, config
        ),
        "version": version,
        "config": config,
        "overtime_until": overtime,
        "forced_off_until": forced,
        "debug_at": debug_at,
        "debug_until": debug_until,
        "loaded_at": loaded_at,
    }
    if team_id is None:
        return rows, None
    return rows, {
        "team_id": team_id,
        "version": team_version,
        "config": schedule_config.with_defaults(team_config or {}),
        "members_may_exempt": members_may_exempt,
        "member_overtime_minutes": member_overtime_minutes,
        "overtime_until": team_overtime,
        "loaded_at": loaded_at,
    }


#: Stands for the value a compiled query is run with (``compiled_rows``).
_MARK_TEXT = "curfew-compiled-query-mark"
_MARK_ID = -7_340_021
_compiled: dict[tuple[str, str], tuple[str, tuple[Any, ...], int, Any, Any]] = {}


def compiled_rows(name: str, build: Callable[[Any], Any], value: Any) -> list[Any]:
    """The rows of the ``values_list`` query ``build(value)``, compiled by the
    ORM once per database vendor (its SQL and its columns' converters) and
    run again with another ``value``: the cold path's query costs its round
    trip, not Django's compiling of a seven-table join on every call (a
    seventh of a cold verdict). ``build`` must filter on its argument once,
    and is called with a mark (a text, or an id) to find where it goes."""
    conn = connections[DEFAULT_DB_ALIAS]
    key = (name, conn.vendor)
    found = _compiled.get(key)
    if found is None:
        mark = _MARK_ID if isinstance(value, int) else _MARK_TEXT
        compiler = build(mark).query.get_compiler(using=DEFAULT_DB_ALIAS)
        sql, params = compiler.as_sql()
        converters = compiler.get_converters(s[0] for s in compiler.select[: compiler.col_count])
        found = (sql, tuple(params), list(params).index(mark), compiler, converters)
        _compiled[key] = found
    sql, params, index, compiler, converters = found
    bound = list(params)
    bound[index] = value
    # Prepared on PostgreSQL: planning the join cost PostgreSQL about 20
    # times what running it did (``selectors.prepared``).
    with prepared.cursor(conn) as cursor:
        cursor.execute(sql, bound)
        rows: list[Any] = cursor.fetchall()
    if converters:
        rows = list(compiler.apply_converters(rows, converters))
    return rows


def _user_rows(user_id: Any) -> Any:
    return get_user_model().objects.filter(pk=user_id).order_by().values_list(*_ROWS)[:1]


def _load_joined(user_id: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The user's rows and their team's, in one query."""
    found = compiled_rows("user-rows", _user_rows, user_id)
    return rows_from(found[0] if found else NOBODY, cache_policy.clock())


def _load_raw(user_id: int) -> dict[str, Any]:
    return _load_joined(user_id)[0]


def _keep_seconds() -> int:
    return lifetime(settings.CURFEW_SCHEDULE_CACHE_SECONDS)


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


def _load_team_raw(team_id: int) -> dict[str, Any] | None:
    team = (
        Team.objects.filter(id=team_id)
        .values_list(
            "version", "config", "members_may_exempt", "member_overtime_minutes", "overtime_until"
        )
        .first()
    )
    if team is None:
        return None
    version, config, members_may_exempt, member_overtime_minutes, overtime_until = team
    return {
        "team_id": team_id,
        "version": version,
        "config": schedule_config.with_defaults(config),
        "members_may_exempt": members_may_exempt,
        "member_overtime_minutes": member_overtime_minutes,
        "overtime_until": overtime_until,
        "loaded_at": cache_policy.clock(),
    }


def team_raw(team_id: int) -> dict[str, Any] | None:
    """A team's rows, cached like a user's (``None``: no such team any more)."""
    key = team_key(team_id)
    raw: dict[str, Any] | None = cache.get(key)
    if raw is None or not cache_policy.fresh(raw.get("loaded_at", 0.0)):
        try:
            loaded = _load_team_raw(team_id)
        except DatabaseError:
            if raw is None:
                raise
            _unreadable.failed(
                "database unreachable; serving last known schedules (team %s first)", team_id
            )
            return raw
        _unreadable.over("database readable")
        if loaded is None:
            return None
        raw = loaded
        cache.set(key, raw, timeout=_keep_seconds())
    return raw


def refresh_team(team_id: int) -> None:
    """Put a team's committed rows in the shared cache (after the commit; never raises)."""
    key = team_key(team_id)
    try:
        rows = _load_team_raw(team_id)
        if rows is None:
            cache_policy.forget(key)
            return
        cache.set(key, rows, timeout=_keep_seconds())
    except Exception:
        log.warning("could not refresh cached team %s", team_id, exc_info=True)
        cache_policy.forget(key)


#: Each user's team as last seen in this process (user id to team id), so a
#: warm verdict can fetch the user's rows and the team's in one cache read
#: (``edge.caller``). Only a guess: the user's rows read with it decide.
_teams_seen: LRU[int, int] = LRU(maxsize=MAX_BUILT)


def likely_team(user_id: int) -> int | None:
    """The team the user was in when last seen in this process, if any."""
    with _built_lock:
        return _teams_seen.get(user_id)


def bundle_for(user_id: int) -> UserBundle:
    """The user's schedule (defaults if never saved) and overrides, and their
    team's: one cache read, and when the rows are absent or older than the
    freshness bound, one query for the user's rows and their team's."""
    team_id = likely_team(user_id)
    if team_id is None:
        return bundle_from(user_id, cache.get(bundle_key(user_id)))
    found = cache.get_many([bundle_key(user_id), team_key(team_id)])
    return bundle_from(user_id, found.get(bundle_key(user_id)), found.get(team_key(team_id)))


#: Not read from the cache (``bundle_from``'s ``team``).
UNREAD: Any = object()


def bundle_from(user_id: int, raw: dict[str, Any] | None, team: Any = UNREAD) -> UserBundle:
    """``bundle_for`` from what the cache was found to hold (``raw``: the
    user's rows, ``None`` if absent; ``team``: the rows of the team they were
    last seen in, ``None`` if absent, ``UNREAD`` if not read): at most one
    query, for both, when the user's are absent or stale (an absent or stale
    team's alone: one query for the team)."""
    if rows_fresh(raw):
        assert raw is not None
        team_id = raw.get("team_id")
        if team_id is None:
            return _built_from(user_id, raw, None)
        if team is UNREAD or not rows_fresh(team) or team.get("team_id") != team_id:
            team = team_raw(team_id)
        return _built_from(user_id, raw, team)
    try:
        rows, team_rows = _load_joined(user_id)
    except DatabaseError:
        if raw is None:
            raise
        # Nothing can have been committed to a database we cannot read:
        # the last known rows are still the truth. Keep answering.
        _unreadable.failed(
            "database unreachable; serving last known schedules (user %s first)", user_id
        )
        team_id = raw.get("team_id")
        return _built_from(user_id, raw, team_raw(team_id) if team_id is not None else None)
    _unreadable.over("database readable")
    keep_rows(user_id, rows, raw, team_rows, team)
    return _built_from(user_id, rows, team_rows)


def keep_rows(
    user_id: int,
    rows: dict[str, Any],
    before: dict[str, Any] | None,
    team_rows: dict[str, Any] | None,
    team_before: Any = UNREAD,
    also: dict[str, Any] | None = None,
    also_seconds: int | None = None,
) -> None:
    """Cache rows a reader loaded (``before``, ``team_before``: what the cache
    held, ``UNREAD`` if not read), by ``cache_policy``'s rules: an absent
    entry is only *added* (a writer's fresher one must win the race), a stale
    one replaced, a fresh one left alone. ``also``: entries to set beside
    them (a token's check, kept ``also_seconds``), in the same round trip
    when their lifetimes agree."""
    keep = _keep_seconds()
    sets: dict[str, Any] = {}
    adds: dict[str, Any] = {}
    (adds if before is None else sets)[bundle_key(user_id)] = rows
    if team_rows is not None:
        key = team_key(team_rows["team_id"])
        if team_before is UNREAD or team_before is None:
            adds[key] = team_rows
        elif not rows_fresh(team_before) or team_before.get("team_id") != team_rows["team_id"]:
            sets[key] = team_rows
    if also:
        if also_seconds is None or also_seconds == keep:
            sets.update(also)
        else:
            cache.set_many(also, timeout=also_seconds)
    if sets:
        cache.set_many(sets, timeout=keep)
    for key, value in adds.items():
        cache.add(key, value, timeout=keep)


def bundles_for(user_ids: list[int]) -> dict[int, UserBundle]:
    """``bundle_for`` of many users at once (a page of a team's members): one
    cache read for them all, and for those missing or stale one query per
    table, whatever their number."""
    keys = {user_id: bundle_key(user_id) for user_id in user_ids}
    cached = cache.get_many(list(keys.values()))
    raws: dict[int, dict[str, Any]] = {}
    missing = []
    for user_id, key in keys.items():
        found: dict[str, Any] | None = cached.get(key)
        if found is not None and rows_fresh(found):
            raws[user_id] = found
        else:
            missing.append(user_id)
    if missing:
        loaded = _load_raw_many(missing)
        cache.set_many({keys[user_id]: rows for user_id, rows in loaded.items()}, _keep_seconds())
        raws.update(loaded)
    teams: dict[int, dict[str, Any] | None] = {}
    out = {}
    for user_id, raw in raws.items():
        team_id = raw.get("team_id")
        if team_id is not None and team_id not in teams:
            teams[team_id] = team_raw(team_id)
        out[user_id] = _built_from(user_id, raw, teams.get(team_id) if team_id else None)
    return out


def _load_raw_many(user_ids: list[int]) -> dict[int, dict[str, Any]]:
    """``_load_raw`` of many users, in one query (a team's members woken at once:
    each table's list of thousands of ids was most of the reading)."""
    found = {
        row[0]: row[1:]
        for row in get_user_model().objects.filter(pk__in=user_ids).values_list("pk", *_ROWS)
    }
    loaded_at = cache_policy.clock()
    #: One filled-in copy per distinct stored settings (most members keep the
    #: defaults): filling in is a deep copy, the key a short dump.
    configs: dict[str, dict[str, Any]] = {}
    return {
        user_id: rows_from(found.get(user_id, NOBODY), loaded_at, configs)[0]
        for user_id in user_ids
    }


def cached_bundle(
    user_id: int, raw: dict[str, Any] | None, team: dict[str, Any] | None = None
) -> UserBundle | None:
    """``bundle_for`` from the rows already read from the cache
    (``cache_policy.bundle_key``'s value, and ``team_key``'s of the user's
    team), or ``None`` if they must be read again (absent, or older than the
    freshness bound, or not the user's team's): then ``bundle_for``."""
    if not rows_fresh(raw):
        return None
    assert raw is not None
    team_id = raw.get("team_id")
    if team_id is not None:
        if team is None or not rows_fresh(team) or team.get("team_id") != team_id:
            return None
    else:
        team = None
    return _built_from(user_id, raw, team)


def _team_side(raw: dict[str, Any], language: str) -> TeamSide:
    """The team's side as said to a member whose language is ``language``
    (``selectors.spoken``): the engine decides on it as it is."""
    return TeamSide(
        schedule=shared_schedule(spoken_config(raw["config"], language))[1],
        policy=TeamPolicy(
            members_may_exempt=raw["members_may_exempt"],
            member_overtime=timedelta(minutes=raw["member_overtime_minutes"]),
        ),
        overtime_until=raw["overtime_until"],
    )


#: Built team sides per team and language, keyed by the rows they were built
#: from: 5,000 members share one built schedule per language. Bounded, least
#: recently used (issue 40), as ``_built``, behind ``_built_lock``.
_teams_built: LRU[tuple[int, str], tuple[tuple[Any, ...], TeamSide]] = LRU(maxsize=MAX_BUILT)


def rows_fresh(raw: dict[str, Any] | None) -> bool:
    """Whether cached rows (``cache_policy.bundle_key``'s value) may be used as they are."""
    return raw is not None and cache_policy.fresh(raw.get("loaded_at", 0.0))


#: Built schedules by their settings: people with the same settings (a team's
#: members on the defaults) share one ``Schedule``, so the engine's per-day
#: memo (keyed by the schedule object) holds one day for all of them rather
#: than one per person, which 5,000 members would overflow on every round.
#: And one copy of the settings themselves (``UserBundle.config``): a copy per
#: member is a hundred objects each that the garbage collector walks again and
#: again while thousands of bundles are kept. Bounded, least recently used
#: (issue 40), behind ``_built_lock``. Keyed by settings, not by user, and an
#: entry is big (the settings and a built ``Schedule``, hundreds of objects):
#: fewer than ``MAX_BUILT``.
_SCHEDULES_KEPT = 10_000
_schedules: LRU[str, tuple[dict[str, Any], Schedule]] = LRU(maxsize=_SCHEDULES_KEPT)


def shared_schedule(config: dict[str, Any]) -> tuple[dict[str, Any], Schedule]:
    """The one copy of ``config`` kept for everyone with these settings (read
    it, never change it), and ``schedule_config.build(config)``."""
    key = json.dumps(config, sort_keys=True, default=str)
    with _built_lock:
        found = _schedules.get(key)
    if found is None:
        found = (config, schedule_config.build(config))
        with _built_lock:
            _schedules[key] = found
    return found


def _built_team(team_id: int, raw: dict[str, Any], language: str) -> TeamSide:
    stamp = (
        raw["version"],
        raw["members_may_exempt"],
        raw["member_overtime_minutes"],
        raw["overtime_until"],
    )
    with _built_lock:
        hit = _teams_built.get((team_id, language))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    side = _team_side(raw, language)
    with _built_lock:
        _teams_built[(team_id, language)] = (stamp, side)
    return side


def _built_from(
    user_id: int, raw: dict[str, Any], team_rows: dict[str, Any] | None = None
) -> UserBundle:
    team_id: int | None = raw.get("team_id")
    team = None
    if team_id is not None and team_rows is not None:
        # ``get``: rows cached before issue 39 did not say it.
        language = raw.get("language") or spoken_language("", raw["version"], raw["config"])
        team = _built_team(team_id, team_rows, language)
        with _built_lock:
            _teams_seen[user_id] = team_id
    else:
        team_id = None
        with _built_lock:
            _teams_seen.pop(user_id, None)
    # The member's own rows; the team's side is put in beside them. A team's
    # change then rebuilds none of its members' own parts (5,000 of them).
    stamp = (
        raw["version"],
        raw["overtime_until"],
        raw["forced_off_until"],
        raw["debug_at"],
        # ``get``: an entry cached before the time machine had an end.
        raw.get("debug_until"),
        raw.get("overtime_from"),
    )
    with _built_lock:
        hit = _built.get(user_id)
    if hit is not None and hit[0] == stamp:
        built = hit[1]
        if built.team_id == team_id and built.team is team:
            return built
        built = dataclasses.replace(built, team_id=team_id, team=team)
    else:
        config, schedule = shared_schedule(raw["config"])
        built = UserBundle(
            user_id=user_id,
            version=raw["version"],
            config=config,
            schedule=schedule,
            overrides=Overrides(
                overtime_until=_in_range(user_id, "overtime_until", raw["overtime_until"]),
                forced_off_until=_in_range(user_id, "forced_off_until", raw["forced_off_until"]),
                debug_at=_in_range(user_id, "debug_at", raw["debug_at"]),
                debug_until=raw.get("debug_until"),
            ),
            team_id=team_id,
            team=team,
            overtime_from=raw.get("overtime_from"),
        )
    with _built_lock:
        _built[user_id] = (stamp, built)
    return built


def built(user_id: int, raw: dict[str, Any], team_rows: dict[str, Any] | None = None) -> UserBundle:
    """The bundle of rows just read (``rows_from``), as ``bundle_for`` builds it."""
    return _built_from(user_id, raw, team_rows)


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
    return {**schedule_config.shown(config), "version": row.version if row else UNSAVED_VERSION}


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
