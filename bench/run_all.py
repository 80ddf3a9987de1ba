"""``make bench``: the benches in production's configuration, in one run, and their pages.

    python -m bench.run_all [--quick] [NAME ...]      # make bench: PostgreSQL + Redis
    python -m bench.run_all --sqlite [NAME ...]       # make bench-sqlite: every other script

``make bench`` runs, one after the other in one run, the benches of issue 40 in
production's configuration (``bin/serve``'s settings on PostgreSQL and Redis),
each of which serves its own floor or baseline side by side with what it
measures, in the same run:

- ``edge_production``: the warm verdict against the raw-ASGI hello-world;
- ``cold_path``: 10,000 users in turn against 10, and a team key through
  5,000 members against a member's own token;
- ``redis_cost``: the Redis commands of a cold verdict, and of one asked again
  past the freshness, beside a warm one; the Redis memory a user holds;
- ``ledger_scale``: the ledger at 1M and 10M rows, the old query shapes
  beside the new;
- ``capsule_fanout``: a push to 10,000 capsules, uvicorn's defaults beside
  ``bin/serve`` in one process and two on Redis;
- ``hook_speed``: the ``curfew`` command's start beside ``true``, ``python``
  and ``curl`` (client side: the server's configuration does not enter).

It needs PostgreSQL (``postgres://postgres@127.0.0.1:5432``, or
``CURFEW_TEST_POSTGRES_URL`` for the ledger) and Redis (``REDIS_URL``, else
``redis://127.0.0.1:6379/0``), and stops at once, saying which is missing,
without them: it never falls back to SQLite. ``make bench-sqlite`` (``--sqlite``)
runs every other script in ``bench/`` the old way (SQLite and the
process-local cache, or in-process).

``--quick`` gives the long benches modest sizes (one round each, the ledger at
1M rows over the 30-day retention only), for a shared machine; it
replaces no bench's own page with a smaller run's.

Pages: a script that records its runs itself (it takes ``--write FILE``) is
given ``docs/benchmarks/<name>.md``; for every other, what it printed is
written there, under the date, the machine and the commit (not in a
``--quick`` run, which would replace a full run's page with a partial one).
The production run also writes ``docs/benchmarks/make_bench.md``: every
bench's configuration, its side-by-side tables, its time and the load average
before and after it. So the benchmark tables in docs/ come from runs, never
from hand. Scripts starting with ``_`` are helpers; ``NAME …`` runs only those.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.record import loadavg, machine, revision, versions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOCS = ROOT / "docs" / "benchmarks"
#: Where the production benches find PostgreSQL (they make and drop their own
#: databases on it) and Redis (each in a key prefix of its own).
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
REDIS_DEFAULT = "redis://127.0.0.1:6379/0"
#: Helpers, the long soak that has a target of its own (``make capsule-soak``),
#: and the twins A/B and the walks (issue 43: run by hand, their old side from git).
NOT_A_BENCH = {"run_all", "record", "servers", "capsule_soak", "twins", "walks"}


@dataclass(frozen=True)
class Bench:
    name: str
    measures: str
    against: str
    configuration: str
    full: list[str] = field(default_factory=list)
    quick: list[str] = field(default_factory=list)
    #: Its page in docs/benchmarks, when not ``<name>.md``.
    page: str = ""
    #: Set for its run (and the servers it starts, which inherit them).
    env: dict[str, str] = field(default_factory=dict)


PRODUCTION = [
    Bench(
        "edge_production",
        "warm `POST /api/v1/verdict`, one token",
        "the raw-ASGI hello-world served the same way (the floor)",
        "uvicorn, one worker each, `bin/serve`'s HTTP flags; PostgreSQL + Redis "
        "(`SharedRedisCache`, the token's rate counted on Redis)",
        quick=["--rounds", "2", "--seconds", "3"],
    ),
    Bench(
        "cold_path",
        "verdicts of 10,000 users in turn; a team key naming 5,000 members in turn",
        "10 users in turn; a member's own token",
        "`bin/serve` (production settings), one worker; PostgreSQL + Redis, "
        "`CURFEW_CACHE_FRESH_SECONDS` and `CONN_MAX_AGE` at their defaults",
        quick=["--rounds", "1", "--seconds", "4"],
    ),
    Bench(
        "redis_cost",
        "Redis commands of a cold verdict and of one past the freshness; Redis memory a user",
        "a warm verdict, the same users at once after",
        "`bin/serve` (production settings), one worker; PostgreSQL + Redis, "
        "`CURFEW_CACHE_FRESH_SECONDS` at its default",
    ),
    Bench(
        "ledger_scale",
        "the 7-day CSV export a row, Activity reads, a session filter, a prune",
        "the same at 1M rows, and the old indexes and query shapes at each size",
        "PostgreSQL, one process (the code's own selectors, no server)",
        full=["--rows", "1000000,10000000", "--days", "365,30", "--sqlite-rows", "0"],
        quick=["--rows", "1000000", "--days", "30", "--sqlite-rows", "0"],
    ),
    Bench(
        "capsule_fanout",
        "a push (override, timer boundary) to 10,000 open capsules; memory a socket",
        "uvicorn's defaults, and `bin/serve` in one process",
        "`bin/serve`, one process and two on one Redis (the channel layer); "
        "the rows as stored on SQLite",
        page="capsule.md",
        # Every socket comes from 127.0.0.1: the cap per address would close
        # all but the first 256 (4429), and CURFEW_THROTTLE=0 does not lift it.
        env={"CURFEW_CAPSULE_SOCKETS_PER_ADDRESS": "0"},
    ),
    Bench(
        "hook_speed",
        "the `curfew` command's start (hook warm and cold, status)",
        "`true`, `python -c pass`, `curl` to the verdict API",
        "client side (the server it asks: uvicorn on SQLite; the server's "
        "configuration does not enter)",
        quick=["--runs", "60", "--cold-runs", "20"],
    ),
]


def writes_its_own(script: Path) -> bool:
    return '"--write"' in script.read_text(encoding="utf-8")


def printed_page(name: str, output: str, seconds: float, code: int) -> str:
    return (
        f"# `bench/{name}.py`\n\n"
        f"Written by `make bench` (`bench/run_all.py`) from the script's own output, "
        f"not by hand; each run replaces it.\n\n"
        f"- date: {dt.datetime.now(dt.UTC).date().isoformat()}\n"
        f"- machine: {machine()}; Python {platform.python_version()}\n"
        f"- commit: {os.environ.get('BENCH_REVISION') or revision()}\n"
        f"- load average at the end: {loadavg()}\n"
        f"- took {seconds:.0f} s, exit {code}\n\n"
        "The machine may be shared: compare the rows of one run, side by side.\n\n"
        f"```\n{output.rstrip()}\n```\n"
    )


def missing_services() -> list[str]:
    """What the production benches need and cannot reach, said plainly."""
    import psycopg
    import redis

    problems = []
    for url in dict.fromkeys([POSTGRES_URL, os.environ.get("CURFEW_TEST_POSTGRES_URL", "")]):
        if not url:
            continue
        try:
            psycopg.connect(url, connect_timeout=3).close()
        except psycopg.Error as error:
            problems.append(f"PostgreSQL at {url}: {str(error).strip().splitlines()[0]}")
    redis_url = os.environ.get("REDIS_URL", REDIS_DEFAULT)
    try:
        redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        problems.append(f"Redis at {redis_url}: {error}")
    return problems


#: How make_bench.md keeps each bench's run (JSON in an HTML comment), so a
#: run of some benches (``NAME …``) replaces only theirs.
MARK = "<!-- make-bench-run "
BY_NAME = {b.name: b for b in PRODUCTION}


def ran_facts(
    bench: Bench, args: list[str], output: str, seconds: float, code: int, before: str
) -> dict[str, Any]:
    return {
        "name": bench.name,
        "args": args,
        "output": output,
        "seconds": round(seconds),
        "code": code,
        "load_before": before,
        "load_after": loadavg(),
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
        # BENCH_REVISION: the commit measured, when run from an export without .git.
        "revision": os.environ.get("BENCH_REVISION") or revision(),
    }


def kept_runs(path: Path) -> dict[str, dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(MARK) and line.endswith(" -->"):
                one = json.loads(line[len(MARK) : -len(" -->")])
                runs[one["name"]] = one
    return runs


def start_page(page: Path, name: str) -> None:
    """Give a page its title before a bench that appends its runs writes the first."""
    if not page.exists():
        page.write_text(
            f"# `bench/{name}.py`\n\n"
            f"Written by `python -m bench.{name} --write` (`make bench`), not by hand: "
            "each run is appended below, with its configuration, machine and load.\n"
        )


def run_one(
    script: Path,
    args: list[str],
    *,
    record: bool,
    page_name: str = "",
    env: dict[str, str] | None = None,
) -> tuple[str, int, float]:
    """Run ``bench.<script>`` with ``args``; echo and return what it printed."""
    started = time.monotonic()
    command = [sys.executable, "-m", f"bench.{script.stem}", *args]
    page = DOCS / (page_name or f"{script.stem}.md")
    own = writes_its_own(script)
    if own:
        start_page(page, script.stem)
        command += ["--write", str(page)]
    measured = os.environ.get("BENCH_REVISION")
    if measured and '"--revision"' in script.read_text(encoding="utf-8"):
        command += ["--revision", measured]
    print(f"\n=== {script.name} {' '.join(command[3:])}", flush=True)
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    code = process.wait()
    output = "".join(lines)
    seconds = time.monotonic() - started
    if not own and record and code == 0:
        page.write_text(printed_page(script.stem, output, seconds, code))
    print(f"--- {script.name}: exit {code} in {seconds:.0f}s", flush=True)
    return output, code, seconds


def production_page(runs: dict[str, dict[str, Any]]) -> str:
    ordered = [runs[b.name] for b in PRODUCTION if b.name in runs]
    parts = [
        "# `make bench`: production's configuration, in one run\n",
        "Written by `make bench` (`bench/run_all.py`), not by hand: a run of every bench "
        "replaces the page, a run of some (`python -m bench.run_all NAME`) replaces theirs. "
        "The benches run one after the other, and each serves what it measures side by "
        "side with its own floor or baseline (the column *against*), in the same run: "
        "compare the rows of one bench's table, not figures across benches, runs or "
        "machines. Each bench's own page keeps its earlier runs.\n",
        f"- machine: {machine()}; {versions()}\n",
        "| bench | measures | against (same run) | configuration | arguments | ended (UTC) "
        "| commit | took | load before → after | exit |",
        "|---|---|---|---|---|---|---|---:|---|---:|",
    ]
    for one in ordered:
        b = BY_NAME[one["name"]]
        args = f"`{' '.join(one['args'])}`" if one["args"] else "defaults"
        page = b.page or f"{b.name}.md"
        name = f"[`{b.name}`]({page})" if (DOCS / page).exists() else f"`{b.name}`"
        parts.append(
            f"| {name} | {b.measures} | {b.against} | "
            f"{b.configuration} | "
            f"{args} | {one['at']} | {one['revision']} | {one['seconds']} s | "
            f"{one['load_before']} → {one['load_after']} | {one['code']} |"
        )
    for one in ordered:
        parts += [
            f"\n## {one['name']}\n",
            f"`python -m bench.{' '.join([one['name'], *one['args']])}`, "
            f"ended {one['at']}, load average {one['load_before']} → {one['load_after']}\n",
            f"```\n{one['output'].rstrip()}\n```",
            f"\n{MARK}{json.dumps(one, sort_keys=True)} -->",
        ]
    return "\n".join(parts) + "\n"


def production(names: set[str], quick: bool) -> int:
    problems = missing_services()
    if problems:
        print(
            "make bench measures production's configuration and needs PostgreSQL and Redis; "
            "not reachable:\n  " + "\n  ".join(problems) + "\n"
            "Start them (or set CURFEW_TEST_POSTGRES_URL / REDIS_URL), or run "
            "`make bench-sqlite` for the SQLite benches.",
            file=sys.stderr,
        )
        return 2
    DOCS.mkdir(parents=True, exist_ok=True)
    page = DOCS / "make_bench.md"
    runs = kept_runs(page) if names else {}
    ran: list[dict[str, Any]] = []
    for bench in PRODUCTION:
        if names and bench.name not in names:
            continue
        before = loadavg()
        args = bench.quick if quick else bench.full
        # A --quick run replaces no bench's own page with a smaller run's.
        record = not quick or bench.quick == bench.full
        output, code, seconds = run_one(
            HERE / f"{bench.name}.py", args, record=record, page_name=bench.page, env=bench.env
        )
        one = ran_facts(bench, args, output, seconds, code, before)
        ran.append(one)
        runs[bench.name] = one
        page.write_text(production_page(runs))
    print("\n| bench | took | load before → after | exit |")
    for one in ran:
        print(
            f"| {one['name']} | {one['seconds']} s | {one['load_before']} → "
            f"{one['load_after']} | {one['code']} |"
        )
    failed = [one["name"] for one in ran if one["code"]]
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


def sqlite(names: set[str]) -> int:
    """The old path: every script but the production ones, each on its own terms."""
    skip = NOT_A_BENCH | {b.name for b in PRODUCTION}
    failed = []
    DOCS.mkdir(parents=True, exist_ok=True)
    for script in sorted(HERE.glob("*.py")):
        if script.name.startswith("_") or script.stem in skip:
            continue
        if names and script.stem not in names:
            continue
        _, code, _ = run_one(script, [], record=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--quick", "--sqlite"}
    if unknown:
        print(f"unknown option(s): {', '.join(sorted(unknown))}\n{__doc__}", file=sys.stderr)
        return 2
    names = {a for a in argv if not a.startswith("--")}
    if "--sqlite" in flags:
        return sqlite(names)
    known = {b.name for b in PRODUCTION}
    if names - known:
        print(
            f"not a production bench: {', '.join(sorted(names - known))} "
            f"(those: {', '.join(sorted(known))}; the others run with --sqlite)",
            file=sys.stderr,
        )
        return 2
    return production(names, "--quick" in flags)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
