"""What a verdict costs Redis, cold and warm, and what a user holds there (issue 40).

    python -m bench.redis_cost [--users 500]

``bin/serve`` (production settings, one worker) on a throwaway PostgreSQL
database and a Redis namespace of its own (``REDIS_URL``, else
redis://127.0.0.1:6379/0), ``--users`` users with a token each. Side by side in
one run, counted with ``MONITOR`` filtered by the namespace:

- **cold**: each user's first verdict (nothing of theirs cached yet);
- **warm**: each user's second verdict, at once after (users go in groups of
  ``GROUP``, cold then warm, so it comes well within the freshness);
- **again after the freshness**: each user's third, once
  ``CURFEW_CACHE_FRESH_SECONDS`` (plus a second) has passed, as a gateway
  that caches a verdict for its ``max_age`` asks again.

Printed: Redis commands a verdict of each kind, which commands, and the
namespace's memory (``MEMORY USAGE`` of every key under it) a user. The
commands are counted one request at a time (no concurrency), so the figures
do not depend on the machine's load; the timings are not measured here.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from bench.record import loadavg, machine, versions
from curfew_testkit.server import ROOT, ServedApp

POSTGRES = "postgres://postgres@127.0.0.1:5432"
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
#: Users asked cold then warm in one go (the warm well within the freshness).
GROUP = 10
BODY = json.dumps({"max_tokens": 4096}).encode()

#: Run in the served checkout's ``manage.py shell``: the users and their tokens
#: (raw values known here, stored as ``token_create`` stores them).
SEED = """
import hashlib, json
from django.contrib.auth.models import User
from curfew_core.models import ApiToken
names = [f"redis-{{n:06d}}" for n in range({users})]
User.objects.bulk_create([User(username=n) for n in names], batch_size=2000)
ids = dict(User.objects.filter(username__in=names).values_list("username", "id"))
raws = {{n: f"cfw_rcost{{i:07d}}" for i, n in enumerate(names)}}
ApiToken.objects.bulk_create(
    [ApiToken(user_id=ids[n], name="bench", prefix=r[:12],
              digest=hashlib.sha256(r.encode()).hexdigest()) for n, r in raws.items()],
    batch_size=2000,
)
print(json.dumps([raws[n] for n in names]))
"""


def ask_all(site: ServedApp, tokens: list[str]) -> None:
    for token in tokens:
        ask(site, token)


def ask(site: ServedApp, token: str) -> None:
    request = urllib.request.Request(
        site.base_url + "/api/v1/verdict",
        data=BODY,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            **site.client_headers,
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


class Phases:
    """The Redis commands naming a namespace, in phases: ``phase(name)`` sends a
    marker command (seen by ``MONITOR`` in order), and every command after it,
    to the next marker, is that phase's."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.client: Any = redis.Redis.from_url(REDIS_URL)
        self.mark = f"bench-mark-{secrets.token_hex(4)}"
        self.seen: dict[str, list[str]] = collections.defaultdict(list)
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        self.ready.wait(5)
        time.sleep(0.3)

    def _watch(self) -> None:
        phase = ""
        with self.client.monitor() as monitor:
            self.ready.set()
            for found in monitor.listen():
                command = found["command"]
                if self.mark in command:
                    phase = command.split(self.mark + ":", 1)[1].split()[0].strip("\"'")
                    if phase == "end":
                        return
                elif self.prefix in command and phase:
                    self.seen[phase].append(command)

    def phase(self, name: str) -> None:
        self.client.get(f"{self.mark}:{name}")

    def end(self) -> dict[str, list[str]]:
        time.sleep(1.5)  # a batched write (last_used, the ledger) lands
        self.phase("end")
        self.thread.join(10)
        return self.seen


def memory_of(prefix: str) -> tuple[int, int]:
    client: Any = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"*{prefix}*", count=1000))
    return len(keys), sum(client.memory_usage(key) or 0 for key in keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=500)
    args = parser.parse_args()
    database = f"curfew_bench_{secrets.token_hex(4)}"
    prefix = f"bench-rcost-{secrets.token_hex(4)}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    fresh = int(os.environ.get("CURFEW_CACHE_FRESH_SECONDS", "5"))
    started_load = loadavg()
    site = ServedApp(
        Path(tempfile.mkdtemp(prefix="curfew-rcost-")),
        env={
            "DATABASE_URL": urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{database}")),
            "REDIS_URL": REDIS_URL,
            "CURFEW_REDIS_PREFIX": prefix,
            "CURFEW_TOKEN_RATE": "100000000/minute",
            "CURFEW_LOG_LEVEL": "WARNING",
        },
        workers=1,
        root=ROOT,
    )
    kinds: dict[str, list[str]] = {}
    try:
        site.manage("migrate", "--no-input", "-v0")
        tokens = json.loads(
            site.manage("shell", "-c", SEED.format(users=args.users))
            .stdout.strip()
            .splitlines()[-1]
        )
        site.start(timeout=180)
        counter = Phases(prefix)
        # In groups small enough that the warm pass comes well within the
        # freshness even on a busy machine: cold, then warm, user by user.
        for start in range(0, len(tokens), GROUP):
            group = tokens[start : start + GROUP]
            counter.phase("cold")
            ask_all(site, group)
            counter.phase("warm")
            ask_all(site, group)
        counter.phase("idle")
        keys, used = memory_of(prefix)
        time.sleep(fresh + 1)
        counter.phase("again")
        ask_all(site, tokens)
        seen = counter.end()
        kinds["cold (a user's first verdict)"] = seen["cold"]
        kinds["warm (the same user at once after)"] = seen["warm"]
        kinds[f"again after {fresh + 1} s or more (past the freshness)"] = seen["again"]
    finally:
        site.stop()
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        client: Any = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(match=f"*{prefix}*", count=1000):
            client.delete(key)
    print(
        f"{machine()}; {versions()}; `bin/serve`, one worker, PostgreSQL + Redis, "
        f"CURFEW_CACHE_FRESH_SECONDS={fresh}; {args.users:,} users, one request at a time; "
        f"load average at the start {started_load}, at the end {loadavg()}"
    )
    print()
    print("| verdict | Redis commands a verdict | commands (all verdicts of the row) |")
    print("|---|---:|---|")
    for label, commands in kinds.items():
        names = collections.Counter(c.split()[0].strip('"').upper() for c in commands)
        which = ", ".join(f"{name} {n / args.users:.2f}" for name, n in names.most_common())
        print(f"| {label} | {len(commands) / args.users:.2f} | {which} |")
    print()
    print(
        f"Redis memory after every user's warm verdict: {keys:,} keys, {used / 1024:,.0f} KiB, "
        f"{used / args.users:,.0f} bytes a user (MEMORY USAGE, keys under the namespace)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
