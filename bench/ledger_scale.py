"""The decision ledger at a year's size, on PostgreSQL (issue 40).

    python -m bench.ledger_scale [--rows 1000000,10000000] [--users 2000]
                                 [--budget 120] [--sqlite-rows 1000000]

For each size, in a throwaway PostgreSQL database of its own (made here and
dropped after; ``CURFEW_TEST_POSTGRES_URL``, else the local
``postgres://postgres@127.0.0.1:5432/postgres``): the decisions are filled in
SQL (``generate_series``, in time order as the recorder appends them) over the
past year, among ``--users`` users and thousands of sessions, one user (the
one read) owning a tenth of them, and the hourly totals summed from them. Then,
side by side in one run:

- **before**: the index ``(user, at DESC)`` and the old export chunk
  (``Q(at__lt=at) | Q(at=at, id__lt=id)``, kept here for the comparison);
- **after**: the migration's indexes (``(user, at DESC, id DESC)`` and the
  partial ``(user, session, at DESC, id DESC)``) and the code as it is.

It times the 7-day CSV export (the page's own generator, all chunks; per row),
the Activity page's reads for 7 days (hourly totals and savings, held minutes,
the session choices, the first page of decisions), the same with a session
filter over 30 days, and one prune of a day's rows. An export that runs past
``--budget`` seconds is stopped and its time a row so far is printed with
``>``. Then the same at ``--sqlite-rows`` on SQLite (the default run), unless 0.

Target: a 7-day export at 10M rows no more than 2x the time a row at 1M.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

POSTGRES_URL = os.environ.get(
    "CURFEW_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
#: The user whose pages are read owns one decision in this many.
HEAVY_EVERY = 10
#: Consecutive decisions of one session (the heavy user's: a tenth of them).
SESSION_SPAN = 2_000
#: The old index (before issue 40).
OLD_INDEX = 'CREATE INDEX "decision_user_recent" ON "curfew_core_decision" ("user_id", "at" DESC)'
NEW_INDEXES = (
    'CREATE INDEX "decision_user_at_id" ON "curfew_core_decision" '
    '("user_id", "at" DESC, "id" DESC)',
    'CREATE INDEX "decision_user_session" ON "curfew_core_decision" '
    '("user_id", "session", "at" DESC, "id" DESC) WHERE NOT ("session" = \'\')',
)


def _admin(statement: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def _postgres_up() -> str | None:
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except psycopg.Error:
        return f"no PostgreSQL at {POSTGRES_URL}"
    return None


def _setup_django(database_url: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


# ---- filling -------------------------------------------------------------------


def _fill_postgres(rows: int, users: int, now: dt.datetime, days: int) -> int:
    """``users`` users and ``rows`` decisions over the ``days`` before ``now``,
    in time order; returns the heavy user's id."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO auth_user (username, password, is_superuser, first_name, last_name,"
            " email, is_staff, is_active, date_joined)"
            " SELECT 'u' || g, '!', false, '', '', '', false, true, now()"
            " FROM generate_series(1, %s) g",
            [users],
        )
        cursor.execute("SELECT min(id) FROM auth_user")
        first = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO curfew_core_decision (user_id, at, session, purpose, state, action,"
            " reason, budget_before, budget_after, origin, exempt, dry_run, input_tokens,"
            " output_tokens)"
            " SELECT CASE WHEN g %% %(every)s = 0 THEN %(first)s"
            "  ELSE %(first)s + 1 + (g::bigint * 7919) %% (%(users)s - 1) END,"
            " date_trunc('second',"
            "  %(now)s - interval '1 day' * %(days)s * (1 - g::float8 / %(rows)s)),"
            " CASE WHEN g %% 3 = 0 THEN '' WHEN g %% %(every)s = 0"
            "  THEN 'heavy-' || (g / %(span)s) ELSE 's-' || ((g::bigint * 31) %% 5000) END,"
            " '', (ARRAY['on-duty','winding','off-duty','lights-out'])[1 + g %% 4],"
            " (ARRAY['pass','clamp','short-circuit','pass'])[1 + (g / 4) %% 4],"
            " 'a reason of about this length, as most are', 4096, 1024, 'chat', false, false,"
            " 900 + g %% 300, 200 + g %% 700"
            " FROM generate_series(1, %(rows)s) g",
            {
                "every": HEAVY_EVERY,
                "first": first,
                "users": users,
                "now": now,
                "days": days,
                "rows": rows,
                "span": SESSION_SPAN,
            },
        )
        cursor.execute(_HOURS_SQL)
        cursor.execute("ANALYZE curfew_core_decision")
        cursor.execute("ANALYZE curfew_core_decisionhour")
    return first


#: The hourly totals, summed from the decisions (UTC hours; the users have no schedule).
_HOURS_SQL = """
INSERT INTO curfew_core_decisionhour (user_id, hour_start, local_date, local_hour, state,
  action, count, exempt, dry_run, requests_not_sent, output_tokens_not_generated,
  usage_known, input_tokens, output_tokens)
SELECT user_id, date_trunc('hour', at), (date_trunc('hour', at) AT TIME ZONE 'UTC')::date,
  extract(hour FROM at AT TIME ZONE 'UTC')::int, state, action, count(*), 0, 0,
  count(*) FILTER (WHERE action = 'short-circuit'),
  coalesce(sum(budget_before - budget_after) FILTER (WHERE action = 'clamp'), 0),
  count(*), sum(input_tokens), sum(output_tokens)
FROM curfew_core_decision GROUP BY 1, 2, 3, 4, 5, 6
"""


def _fill_sqlite(rows: int, users: int, now: dt.datetime, days: int) -> int:
    from django.db import connection

    start = now - dt.timedelta(days=days)
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < %s)"
            " INSERT INTO auth_user (username, password, is_superuser, first_name, last_name,"
            " email, is_staff, is_active, date_joined)"
            " SELECT 'u' || n, '!', 0, '', '', '', 0, 1, '2026-01-01 00:00:00' FROM g",
            [users],
        )
        cursor.execute("SELECT min(id) FROM auth_user")
        first = cursor.fetchone()[0]
        base = start.replace(tzinfo=None).isoformat(" ", "seconds")
        cursor.execute(
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < %(rows)s)"
            " INSERT INTO curfew_core_decision (user_id, at, session, purpose, state, action,"
            " reason, budget_before, budget_after, origin, exempt, dry_run, input_tokens,"
            " output_tokens)"
            " SELECT CASE WHEN n %% %(every)s = 0 THEN %(first)s"
            "  ELSE %(first)s + 1 + (n * 7919) %% (%(users)s - 1) END,"
            " datetime(%(base)s,"
            "  '+' || CAST(86400.0 * %(days)s * n / %(rows)s AS INTEGER) || ' seconds'),"
            " CASE WHEN n %% 3 = 0 THEN '' WHEN n %% %(every)s = 0"
            "  THEN 'heavy-' || (n / %(span)s) ELSE 's-' || ((n * 31) %% 5000) END,"
            " '', CASE n %% 4 WHEN 0 THEN 'on-duty' WHEN 1 THEN 'winding' WHEN 2 THEN 'off-duty'"
            "  ELSE 'lights-out' END,"
            " CASE (n / 4) %% 4 WHEN 1 THEN 'clamp' WHEN 2 THEN 'short-circuit' ELSE 'pass' END,"
            " 'a reason of about this length, as most are', 4096, 1024, 'chat', 0, 0,"
            " 900 + n %% 300, 200 + n %% 700 FROM g",
            {
                "every": HEAVY_EVERY,
                "first": first,
                "users": users,
                "base": base,
                "days": days,
                "rows": rows,
                "span": SESSION_SPAN,
            },
        )
        cursor.execute(
            "INSERT INTO curfew_core_decisionhour (user_id, hour_start, local_date, local_hour,"
            " state, action, count, exempt, dry_run, requests_not_sent,"
            " output_tokens_not_generated, usage_known, input_tokens, output_tokens)"
            " SELECT user_id, strftime('%%Y-%%m-%%d %%H:00:00', at), date(at),"
            " CAST(strftime('%%H', at) AS INTEGER), state, action, count(*), 0, 0,"
            " sum(action = 'short-circuit'), 0, count(*), sum(input_tokens), sum(output_tokens)"
            " FROM curfew_core_decision GROUP BY 1, 2, 3, 4, 5, 6",
            (),
        )
        cursor.execute("ANALYZE")
    return first


# ---- the shapes ------------------------------------------------------------------


def _old_export_chunk(
    *, user_id: int, period: Any, after: tuple[dt.datetime, int] | None, size: int = 1_000
) -> list[Any]:
    """The export's chunk before issue 40: "after this row" as an OR."""
    from django.db.models import Q

    from curfew_core.models import Decision
    from curfew_core.selectors import ledger_page

    rows = Decision.objects.filter(user_id=user_id, at__gte=period.since, at__lt=period.until)
    if after is not None:
        at, row_id = after
        rows = rows.filter(Q(at__lt=at) | Q(at=at, id__lt=row_id))
    found = rows.order_by("-at", "-id").values_list(*ledger_page._LINE_FIELDS)[:size]
    return [ledger_page._line(row, period.zone) for row in found]


def _export(chunk: Callable[[Any], list[Any]], budget: float) -> tuple[int, float, bool]:
    """The page's own CSV generator over every chunk: rows, seconds, finished."""
    from curfew_core.web.activity.export import csv_lines

    started = time.perf_counter()
    lines: Iterator[bytes] = csv_lines(chunk, chunk(None))
    written = -1  # the header
    for block in lines:
        written += block.count(b"\n")
        if time.perf_counter() - started > budget:
            return written, time.perf_counter() - started, False
    return written, time.perf_counter() - started, True


def _timed(call: Callable[[], Any], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def _activity(user_id: int, period: Any, session: str | None) -> None:
    """What the Activity page reads for a period (and filter)."""
    from curfew_core.selectors import ledger_page
    from curfew_core.selectors.ledger import savings_of

    found = ledger_page.hours(user_id=user_id, period=period, session=session)
    savings_of(user_id=user_id, buckets=found.buckets)
    ledger_page.minutes_held_off(user_id=user_id, period=period, session=session)
    ledger_page.session_choices(user_id=user_id, period=period)
    ledger_page.recent_decisions(user_id=user_id, period=period, session=session)


def _schema(old: bool) -> float:
    """The indexes of before (``old``) or after; returns how long building took."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        for name in ("decision_user_recent", "decision_user_at_id", "decision_user_session"):
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        for statement in (OLD_INDEX,) if old else NEW_INDEXES:
            cursor.execute(statement)
        cursor.execute("ANALYZE curfew_core_decision")
    return time.perf_counter() - started


def _size_a_row(rows: int) -> str:
    from django.db import connection

    if connection.vendor != "postgresql":
        return "-"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('curfew_core_decision')")
        return f"{cursor.fetchone()[0] / rows:.0f} B"


def _measure(rows: int, users: int, budget: float, vendor: str, days: int) -> dict[str, Any]:
    from django.db import connection
    from django.utils import timezone

    from curfew_core.models import Decision
    from curfew_core.selectors import ledger_page
    from curfew_core.services.ledger import decisions_prune

    now = timezone.now()
    started = time.perf_counter()
    heavy = (_fill_postgres if vendor == "postgresql" else _fill_sqlite)(rows, users, now, days)
    filled = time.perf_counter() - started
    week = ledger_page.period_of(7, now=now, tz_name="UTC")
    month = ledger_page.period_of(30, now=now, tz_name="UTC")
    with connection.cursor() as cursor:
        # The session with the most of the month's decisions: the filter's worst.
        cursor.execute(
            "SELECT session FROM curfew_core_decision WHERE user_id = %s AND session <> ''"
            " AND at >= %s GROUP BY session ORDER BY count(*) DESC LIMIT 1",
            [heavy, month.since],
        )
        session = cursor.fetchone()[0]
    result: dict[str, Any] = {"rows": rows, "filled": filled}
    for label, old in (("before", True), ("after", False)):
        built = _schema(old)
        if old:
            chunk: Callable[[Any], list[Any]] = lambda after: _old_export_chunk(  # noqa: E731
                user_id=heavy, period=week, after=after
            )
        else:
            chunk = lambda after: ledger_page.export_chunk(  # noqa: E731
                user_id=heavy, period=week, after=after
            )
        exported, seconds, finished = _export(chunk, budget)
        result[label] = {
            "indexes": built,
            "size": _size_a_row(rows),
            "exported": exported,
            "export": seconds,
            "finished": finished,
            "activity": _timed(lambda: _activity(heavy, week, None)),
            "session": _timed(lambda: _activity(heavy, month, session)),
        }
        # A day's decisions past the retention: the old prune (one DELETE by
        # ``at``, no index starts with it), then the new (by user and at).
        cutoff = now - dt.timedelta(days=days - (1 if old else 2))
        started = time.perf_counter()
        if old:
            pruned = Decision.objects.filter(at__lt=cutoff).delete()[0]
        else:
            pruned = decisions_prune(before=cutoff)
        result[label]["prune"] = (pruned, time.perf_counter() - started)
        print(f"  {vendor} {rows:,} rows, {label}: {result[label]}", file=sys.stderr, flush=True)
    return result


def _run_size(rows: int, users: int, budget: float, vendor: str, days: int) -> dict[str, Any]:
    """One size in a database of its own, in a child process (Django is set up once)."""
    import subprocess

    workdir = Path(tempfile.mkdtemp(prefix="curfew-ledger-scale-"))
    name = f"curfew_bench_ledger_{secrets.token_hex(4)}"
    if vendor == "postgresql":
        _admin(f'CREATE DATABASE "{name}"')
        url = urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
    else:
        url = f"sqlite:///{workdir / 'ledger.sqlite3'}"
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.ledger_scale",
                "--one",
                url,
                "--rows",
                str(rows),
                "--users",
                str(users),
                "--budget",
                str(budget),
                "--heavy-every",
                str(HEAVY_EVERY),
                "--days",
                str(days),
            ],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            check=False,
        )
        sys.stderr.write(out.stderr)
        if out.returncode:
            raise RuntimeError(f"ledger_scale at {rows:,} rows failed (exit {out.returncode})")
        import ast

        return dict(ast.literal_eval(out.stdout.strip().splitlines()[-1]))
    finally:
        if vendor == "postgresql":
            _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(workdir, ignore_errors=True)


def _one(url: str, rows: int, users: int, budget: float, days: int) -> None:
    _setup_django(url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    print(repr(_measure(rows, users, budget, connection.vendor, days)))


def _per_row(side: dict[str, Any]) -> str:
    if side["exported"] <= 0:
        return "-"
    mark = "" if side["finished"] else ">"
    return f"{mark}{side['export'] / side['exported'] * 1e6:.1f} µs"


def _table(vendor: str, results: list[dict[str, Any]]) -> None:
    print(
        f"\n{vendor}: the 7-day export of the user owning 1 decision in {HEAVY_EVERY} "
        "(all its chunks, through the page's CSV generator), before and after:"
    )
    print(
        "| rows | filled | side | index build | size a row | 7-day export rows | "
        "export | a row | Activity 7 days | session filter 30 days |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        for label in ("before", "after"):
            s = r[label]
            done = "" if s["finished"] else f" (stopped at {s['exported']:,})"
            print(
                f"| {r['rows']:,} | {r['filled']:.0f} s | {label} | {s['indexes']:.1f} s | "
                f"{s['size']} | {s['exported']:,}{done} | {s['export']:.2f} s | "
                f"{_per_row(s)} | {s['activity'] * 1000:.1f} ms | {s['session'] * 1000:.1f} ms |"
            )
    for r in results:
        for label in ("before", "after"):
            pruned, seconds = r[label]["prune"]
            print(
                f"prune at {r['rows']:,} rows, {label}: {pruned:,} decisions (a day's) "
                f"in {seconds:.2f} s"
            )
    if len(results) >= 2:
        small, big = results[0]["after"], results[-1]["after"]
        ratio = (big["export"] / big["exported"]) / (small["export"] / small["exported"])
        verdict = "met" if ratio <= 2 and big["finished"] else "NOT met"
        print(
            f"target (a row of the export at {results[-1]['rows']:,} no more than 2x one at "
            f"{results[0]['rows']:,}): {ratio:.2f}x, {verdict}"
        )


def main(argv: list[str]) -> int:
    global HEAVY_EVERY
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,10000000")
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument(
        "--heavy-every", type=int, default=HEAVY_EVERY, help="the user read owns 1 row in this many"
    )
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--sqlite-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--days",
        default="365,30",
        help="the spreads of the decisions, in days: a year, and the default retention",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.rows.split(",") if n]
    HEAVY_EVERY = args.heavy_every
    spreads = [int(n) for n in args.days.split(",") if n]
    if args.one:
        _one(args.one, sizes[0], args.users, args.budget, spreads[0])
        return 0
    print(
        f"The decision ledger over {' and over '.join(f'{d} days' for d in spreads)}, "
        f"{args.users:,} users, thousands of sessions; "
        f"each size in a fresh database, before and after side by side in one run; "
        f"an export stopped after {args.budget:.0f} s. Configuration: PostgreSQL at "
        f"{urlsplit(POSTGRES_URL).hostname} (bench/ledger_scale.py; one process, "
        f"{os.cpu_count()} cores shared), then SQLite (the default run)."
    )
    problem = _postgres_up()
    for days in spreads:
        if problem:
            print(f"PostgreSQL: skipped, {problem}")
        else:
            results = [_run_size(n, args.users, args.budget, "postgresql", days) for n in sizes]
            _table(f"PostgreSQL, over {days} days", results)
        if args.sqlite_rows:
            sqlite = [_run_size(args.sqlite_rows, args.users, args.budget, "sqlite", days)]
            _table(f"SQLite, over {days} days", sqlite)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
