"""The process's layer in front of Redis (issue 40): a warm verdict reads no
network, a change made through one process reaches a warm verdict on another
within the push's time, and its token rate at most one Redis command (a lease's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from curfew_testkit.server import ServedApp
from tests.production.conftest import call, forget_namespace, ok, shared_env

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

PEAK_AT = {"at": "2026-09-29T10:00:00+08:00"}
#: How soon the capsules hear a change (docs/security.md: "within a second").
PUSH_SECONDS = 1.0


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str, redis_url: str
) -> Iterator[tuple[ServedApp, ServedApp]]:
    env = shared_env(postgres_url, redis_url)
    workdir = tmp_path_factory.mktemp("warm-pair")
    a = ServedApp(workdir, env=env)
    b = ServedApp(workdir, env=env)
    a.manage("migrate", "--no-input", "-v0")
    a.start()
    try:
        b.start()
    except BaseException:
        a.stop()
        raise
    yield a, b
    b.stop()
    a.stop()
    forget_namespace(env)


class Monitor:
    """The Redis commands naming one deployment's keys, while it is open."""

    def __init__(self, url: str, prefix: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.prefix = prefix
        self.mark = f"monitor-mark-{time.monotonic_ns()}"
        self.commands: list[str] = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.client.monitor() as monitor:
            self.ready.set()
            for seen in monitor.listen():
                command: str = seen["command"]
                if self.mark in command:
                    return
                if self.prefix in command:
                    self.commands.append(command)

    def __enter__(self) -> Monitor:
        self.thread.start()
        self.ready.wait(5)
        time.sleep(0.2)  # the MONITOR command itself is under way
        return self

    def __exit__(self, *_: Any) -> None:
        time.sleep(0.2)
        self.client.get(self.mark)
        self.thread.join(5)


def _user(app: ServedApp, name: str) -> str:
    return app.create_user(name)


def test_a_warm_verdict_costs_at_most_two_redis_commands(
    pair: tuple[ServedApp, ServedApp], redis_url: str
) -> None:
    a, _ = pair
    token = _user(a, "warm-count")
    for _ in range(5):  # cold, then warm (the window of its rate opened)
        ok(a, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)
    with Monitor(redis_url, a.env["CURFEW_REDIS_PREFIX"]) as seen:
        for _ in range(10):
            ok(a, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)
    # Ten warm verdicts: no cache read, and the token's rate counted ahead
    # (a lease: one INCRBY for many requests, ``throttle.ahit_token_rate``),
    # so at most one command between them.
    assert len(seen.commands) <= 1, seen.commands
    assert {command.split()[0] for command in seen.commands} <= {"INCRBY"}
    # Every verdict served is counted on Redis, ahead or as it came.
    client = redis.Redis.from_url(redis_url)
    pattern = f"{a.env['CURFEW_REDIS_PREFIX']}:throttle:token-rate:*"
    assert sum(int(client.get(key) or 0) for key in client.scan_iter(match=pattern)) >= 15


def test_a_change_on_one_process_reaches_a_warm_verdict_on_another_within_the_push(
    pair: tuple[ServedApp, ServedApp], redis_url: str
) -> None:
    a, b = pair
    token = _user(a, "warm-change")
    for _ in range(3):
        assert ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["reply"] == "。"
    # B answers from its own layer: no cache read from Redis.
    with Monitor(redis_url, b.env["CURFEW_REDIS_PREFIX"]) as seen:
        ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)
    assert not [command for command in seen.commands if command.startswith("MGET")]
    version = ok(a, "GET", "/api/v1/schedule", token=token)["version"]
    for reply in ["下班了", "off duty, back at 14:00"]:
        saved = ok(
            a,
            "PATCH",
            "/api/v1/schedule",
            token=token,
            body={"off_duty_reply": reply, "version": version},
        )
        version = saved["version"]
        changed = time.monotonic()
        while ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["reply"] != reply:
            assert time.monotonic() - changed < PUSH_SECONDS, "B kept the old rows"
            time.sleep(0.02)
    # An override made on A, seen on B's warm verdict as soon.
    ok(a, "POST", "/api/v1/overrides", token=token, body={"off": True})
    changed = time.monotonic()
    while ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["override"] != "off":
        assert time.monotonic() - changed < PUSH_SECONDS, "B missed the override"
        time.sleep(0.02)


# -- every way a write commits, with the long freshness on -----------------------------


def _shell(app: ServedApp, script: str) -> str:
    """Run ``script`` in a ``manage.py shell`` of the deployment: a third process,
    writing as the admin's ``save_model``, a shell or a command does."""
    return app.manage("shell", "-c", script).stdout.strip()


def test_the_freshness_is_long_where_writes_are_pushed(pair: tuple[ServedApp, ServedApp]) -> None:
    a, _ = pair
    assert "CURFEW_CACHE_FRESH_SECONDS" not in a.env  # the default with REDIS_URL
    seen = _shell(
        a,
        "from django.conf import settings\n"
        "print(settings.CURFEW_CACHE_FRESH_SECONDS, settings.CURFEW_VERDICT_MAX_AGE)",
    )
    fresh, max_age = map(int, seen.split()[-2:])
    assert fresh == 5 * max_age >= 300


def test_a_model_saved_around_the_services_reaches_a_warm_verdict_on_another_process(
    pair: tuple[ServedApp, ServedApp], redis_url: str
) -> None:
    """The admin's save, a shell, a management command: the model's own
    ``save()``, no service. With entries trusted 300 s, only the push can show
    it to B within the push's second."""
    a, b = pair
    token = _user(a, "warm-orm")
    for _ in range(3):
        assert ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["state"] == "off-duty"
    with Monitor(redis_url, b.env["CURFEW_REDIS_PREFIX"]) as seen:
        ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)
    assert not [command for command in seen.commands if command.startswith("MGET")]  # warm
    _shell(
        a,
        "from django.contrib.auth.models import User\n"
        "from curfew_core.models import Schedule\n"
        "user = User.objects.get(username='warm-orm')\n"
        "row = Schedule.objects.filter(user=user).first() or Schedule(user=user, config={})\n"
        "row.config = {**row.config, 'peak_shift': False}\n"
        "row.version += 1\n"
        "row.save()\n",
    )
    changed = time.monotonic()
    while ok(b, "POST", "/api/v1/verdict", token=token, body=PEAK_AT)["state"] != "on-duty":
        assert time.monotonic() - changed < PUSH_SECONDS, "B kept the rows the ORM replaced"
        time.sleep(0.02)


def test_a_member_renamed_around_the_services_is_not_found_by_the_old_name_on_another_process(
    pair: tuple[ServedApp, ServedApp],
) -> None:
    a, b = pair
    made = _shell(
        a,
        "from django.contrib.auth.models import User\n"
        "from curfew_core.services.teams import member_add, team_create, team_token_create\n"
        "admin = User.objects.create_user('warm-team-admin')\n"
        "team = team_create(name='warm-renamers', admin=admin)\n"
        "member_add(team=team, user=User.objects.create_user('warm-old-name'))\n"
        "print(team_token_create(team=team)[1])\n",
    )
    key = made.split()[-1]
    named = {**PEAK_AT, "user": "warm-old-name"}
    for _ in range(3):  # B knows the name now (and keeps it five minutes)
        ok(b, "POST", "/api/v1/verdict", token=key, body=named)
    _shell(
        a,
        "from django.contrib.auth.models import User\n"
        "user = User.objects.get(username='warm-old-name')\n"
        "user.username = 'warm-new-name'\n"
        "user.save()\n",
    )
    changed = time.monotonic()
    while call(b, "POST", "/api/v1/verdict", token=key, body=named)[0] != 404:
        assert time.monotonic() - changed < PUSH_SECONDS, "B still knew the old name"
        time.sleep(0.02)
    ok(b, "POST", "/api/v1/verdict", token=key, body={**PEAK_AT, "user": "warm-new-name"})
