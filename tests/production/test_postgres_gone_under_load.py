"""PostgreSQL going away under load, in production mode (issue 41, "try what
no one has tried yet").

``bin/serve`` (two workers, PostgreSQL, Redis) answers a steady stream of
verdicts from warm gateways and of API saves while PostgreSQL is cut off for
a few seconds and then comes back: every connection to it closed, and new
ones refused (a switchboard between the app and the real server, which other
test runs share and which is never stopped). Each cached check and row is
trusted for a second only (``CURFEW_CACHE_FRESH_SECONDS=1``), so the outage
is felt by every door. Then PostgreSQL *stalls* for seven seconds:
connections accepted and never answered, as a frozen server or a half-open
network path does (each attempt gives up after the 5 s connect timeout).
What must hold, through both:

- warm verdicts go on answering from the cache's last known rows, and every
  one answered is in the decision ledger once PostgreSQL is back (the
  recorder keeps its batches while the database is away);
- every other answer is in its door's own shape: an API save is a JSON 503
  with ``Retry-After`` (never a 500, never HTML, never a dropped
  connection), a page save the styled 503 page, a verdict of a token never
  seen a JSON 503;
- no save answered 200 is lost, and none answered 503 was committed;
- the servers reconnect by themselves within seconds, no restart.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from urllib.parse import urlencode

import httpx
import pytest

from curfew_testkit.loadgen import is_verdict
from curfew_testkit.server import ServedApp
from tests.faults.test_served_outages import SESSION_COOKIE, Answer, assert_page_503
from tests.production.conftest import forget_namespace, shared_env
from tests.production.switchboard import Switchboard
from tests.web.forms import form_fields

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

CLIENTS = 8
OUTAGE_SECONDS = 3
#: Longer than the connect timeout (5 s): attempts give up during the stall.
STALL_SECONDS = 7


@pytest.fixture
def production(
    tmp_path_factory: pytest.TempPathFactory,
    redis_url: str,
    postgres_board: Switchboard,
) -> Iterator[ServedApp]:
    env = shared_env(
        postgres_board.through, redis_url, CURFEW_TOKEN_RATE="off", CURFEW_CACHE_FRESH_SECONDS="1"
    )
    app = ServedApp(tmp_path_factory.mktemp("postgres-gone"), env=env, workers=2)
    app.start()
    yield app
    app.stop()
    forget_namespace(env)


def _answer(response: httpx.Response) -> Answer:
    return Answer(response.status_code, response.headers, response.content)  # type: ignore[arg-type]


def _json_503(response: httpx.Response) -> bool:
    return (
        response.status_code == 503
        and response.headers.get("content-type", "").startswith("application/json")
        and response.headers.get("retry-after", "").isdigit()
        and response.json().get("error") == "unavailable"
    )


def _decisions(postgres_url: str, username: str) -> int:
    """The user's decisions in the ledger, read from PostgreSQL itself."""
    import psycopg

    with psycopg.connect(postgres_url, connect_timeout=5) as conn:
        row = conn.execute(
            "SELECT count(*) FROM curfew_core_decision d JOIN auth_user u ON u.id = d.user_id "
            "WHERE u.username = %s",
            (username,),
        ).fetchone()
    assert row is not None
    return int(row[0])


class Page:
    """A signed-in browser on the Replies section, posting its form as it holds it."""

    def __init__(self, app: ServedApp, session: str) -> None:
        origin = app.base_url.replace("http://", "https://")
        # The cookies are sent by hand: they are ``Secure`` (production
        # mode), and these requests come as the TLS proxy's, over plain HTTP.
        headers = {**app.client_headers, "Cookie": f"{SESSION_COOKIE}={session}"}
        self.http = httpx.Client(base_url=app.base_url, headers=headers, timeout=15)
        csrf = self.load()
        self.http.headers.update(
            {
                "Cookie": f"{SESSION_COOKIE}={session}; csrftoken={csrf}",
                "Origin": origin,
                "Referer": f"{origin}/replies/",
            }
        )

    def load(self) -> str:
        """Read the form (its version) as the page holds it now; the CSRF cookie."""
        page = self.http.get("/replies/")
        assert page.status_code == 200, page.text[:300]
        self.fields = form_fields(page.text, "replies-form")
        return page.cookies.get("csrftoken") or ""

    def save(self, reply: str) -> httpx.Response:
        fields = [(k, reply if k == "off_duty_reply" else v) for k, v in self.fields]
        return self.http.post(
            "/replies/",
            content=urlencode(fields),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )


def _people(app: ServedApp) -> tuple[str, str, str, str]:
    """API tokens of ``warm``, ``saver`` and ``never-seen``, and a signed-in
    session of ``saver``, made in one management command (each is seconds)."""
    script = (
        "from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY\n"
        "from django.contrib.auth.models import User\n"
        "from django.contrib.sessions.backends.db import SessionStore\n"
        "from curfew_core.services.tokens import token_create\n"
        "users = {}\n"
        "for name in ('warm', 'saver', 'never-seen'):\n"
        "    users[name] = User.objects.create_user(name)\n"
        "    print(token_create(user=users[name], name='api', kind='api')[1])\n"
        "s = SessionStore()\n"
        "s[SESSION_KEY] = str(users['saver'].pk)\n"
        "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'\n"
        "s[HASH_SESSION_KEY] = users['saver'].get_session_auth_hash()\n"
        "s.create()\n"
        "print(s.session_key)\n"
    )
    warm, saver, never_seen, session = app.manage("shell", "-c", script).stdout.split()[-4:]
    return warm, saver, never_seen, session


def _saving_again(
    restore: Callable[[], None], saves: list[tuple[str, int, float, float]]
) -> float | None:
    """``restore()``, then the seconds until an API save sent after it is
    answered 200 (``None``: none within 15 s)."""
    restore()
    back = time.monotonic()
    while time.monotonic() - back < 15:
        if any(save[1] == 200 and save[2] >= back for save in saves[-3:]):
            return time.monotonic() - back
        time.sleep(0.05)
    return None


def test_postgres_gone_under_load_answers_from_cache_and_loses_nothing(
    production: ServedApp, postgres_board: Switchboard, postgres_url: str
) -> None:
    app = production
    warm, saver, never_seen, session = _people(app)
    page = Page(app, session)
    assert page.save("saved from the page before").status_code == 302

    url = f"{app.base_url}/api/v1/verdict"
    verdicts: Counter[str] = Counter()
    #: Each API save: its reply, its status, when it was sent and answered.
    saves: list[tuple[str, int, float, float]] = []
    wrong: list[str] = []
    #: ``Counter[...] += 1`` from eight threads can lose a count (read, add,
    #: write are three steps): each is taken under this lock.
    counting = threading.Lock()
    #: What the database is doing now: ``up``, ``cut`` or ``stalled``.
    phase = ["up"]
    stop = threading.Event()

    def gateway() -> None:
        headers = {"Authorization": f"Bearer {warm}", **app.client_headers}
        with httpx.Client(timeout=15, headers=headers) as http:
            while not stop.is_set():
                during = phase[0]
                try:
                    response = http.post(url, json={"max_tokens": 4096})
                except httpx.HTTPError as exc:
                    wrong.append(f"verdict: {type(exc).__name__}: {exc}")
                    continue
                if response.status_code == 200 and is_verdict(response.content):
                    with counting:
                        verdicts[during] += 1
                elif _json_503(response):
                    with counting:
                        verdicts["503"] += 1
                else:
                    wrong.append(f"verdict: HTTP {response.status_code}: {response.text[:200]}")

    def api_saver() -> None:
        headers = {"Authorization": f"Bearer {saver}", **app.client_headers}
        with httpx.Client(base_url=app.base_url, timeout=15, headers=headers) as http:
            n = 0
            while not stop.is_set():
                n += 1
                reply = f"api save {n}"
                sent = time.monotonic()
                try:
                    response = http.patch("/api/v1/schedule", json={"off_duty_reply": reply})
                except httpx.HTTPError as exc:
                    wrong.append(f"save: {type(exc).__name__}: {exc}")
                    continue
                if response.status_code == 200 or _json_503(response):
                    saves.append((reply, response.status_code, sent, time.monotonic()))
                else:
                    wrong.append(f"save: HTTP {response.status_code}: {response.text[:200]}")
                time.sleep(0.05)

    threads = [threading.Thread(target=gateway, daemon=True) for _ in range(CLIENTS)]
    threads.append(threading.Thread(target=api_saver, daemon=True))
    for thread in threads:
        thread.start()
    warming = time.monotonic()
    while (verdicts["up"] < 100 or len(saves) < 3) and time.monotonic() - warming < 20:
        time.sleep(0.1)  # a loaded machine's first answers can take seconds
    assert verdicts["up"] >= 100, (verdicts, wrong[:5])
    assert len(saves) >= 3, wrong[:5]

    cut_at = time.monotonic()
    postgres_board.cut()
    phase[0] = "cut"
    time.sleep(1.5)  # past the freshness bound: every door now needs the database
    answers = {
        "cold verdict": httpx.post(
            url,
            json={},
            headers={"Authorization": f"Bearer {never_seen}", **app.client_headers},
            timeout=15,
        ),
        "readyz": httpx.get(f"{app.base_url}/readyz", headers=app.client_headers, timeout=15),
    }
    page_save = page.save("saved from the page during the outage")
    time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - cut_at)))
    phase[0] = "up"
    recovered = _saving_again(postgres_board.restore, saves)

    # Then PostgreSQL stalls: connections accepted, never answered. Each
    # attempt gives up after the connect timeout (5 s), and the warm verdicts
    # go on from the last known rows meanwhile.
    stall_at = time.monotonic()
    postgres_board.stall()
    phase[0] = "stalled"
    time.sleep(STALL_SECONDS)
    phase[0] = "up"
    recovered_from_stall = _saving_again(postgres_board.unstall, saves)
    stop.set()
    for thread in threads:
        thread.join(20)

    assert wrong == [], wrong[:5]
    assert recovered is not None, f"no save after PostgreSQL came back: {saves[-5:]}"
    assert recovered_from_stall is not None, f"no save after the stall: {saves[-5:]}"
    assert verdicts["cut"] > 0, f"warm verdicts stopped with the database: {verdicts}"
    assert verdicts["stalled"] > 0, f"warm verdicts stopped with a stalled database: {verdicts}"
    statuses = Counter(save[1] for save in saves)
    assert statuses[503] > 0, f"control: the outage was felt by saves: {statuses}"
    assert _json_503(answers["cold verdict"]), answers["cold verdict"].text[:300]
    assert answers["readyz"].status_code == 503
    assert answers["readyz"].json()["database"] == "unreachable"
    assert_page_503(_answer(page_save))

    # Nothing acknowledged is lost, nothing refused was committed: the saves
    # are one after another, so the stored reply is the last one answered 200.
    last_acknowledged = [save[0] for save in saves if save[1] == 200][-1]
    # A commit the database made just as the link was cut, whose answer never
    # came back, is a 503 that did change something: the one save in flight
    # at the cut may stand too (no save can be told apart from that).
    in_flight = [
        save[0]
        for save in saves
        if save[1] == 503 and any(save[2] <= at <= save[3] for at in (cut_at, stall_at))
    ]
    schedule = httpx.get(
        f"{app.base_url}/api/v1/schedule",
        headers={"Authorization": f"Bearer {saver}", **app.client_headers},
        timeout=15,
    )
    assert schedule.status_code == 200, schedule.text
    assert schedule.json()["off_duty_reply"] in (last_acknowledged, *in_flight)
    # The page saves again, by itself (read anew: the API saves moved its version).
    page.load()
    assert page.save("saved from the page after").status_code == 302

    # Every verdict answered is in the ledger (each worker writes within a
    # second or two of the database's return).
    answered = verdicts["up"] + verdicts["cut"] + verdicts["stalled"]
    deadline = time.monotonic() + 10
    while (stored := _decisions(postgres_url, "warm")) < answered and time.monotonic() < deadline:
        time.sleep(0.25)
    assert stored == answered, f"{answered - stored} answered verdicts missing from the ledger"

    log = app.log_path.read_text(errors="replace")
    assert "cfw_" not in log
    assert "cft_" not in log
    print(
        json.dumps(
            {
                "verdicts": dict(verdicts),
                "saves": dict(statuses),
                "recovered_after_s": round(recovered, 2),
                "recovered_from_stall_after_s": round(recovered_from_stall, 2),
                "ledger_rows": stored,
                "log_lines": log.count("\n"),
                "tracebacks": len(re.findall(r"^Traceback", log, re.M)),
            }
        )
    )
