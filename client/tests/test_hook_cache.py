"""A hook's verdict cache (``curfew_cli.verdicts``) and the reports of the
decisions made from it (``curfew_cli.reports``): fresh until the verdict's
``valid_until`` and ``max_age``, never at or past them; per server, token and
scope; mode 600; every cached decision spooled, then sent to the ledger."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from curfew_cli import reports, verdicts
from curfew_cli.config import load
from curfew_cli.hooks import decide, run
from harness_samples import ASLEEP, SESSION, SLEEPY, WORKING, event, in_subagent
from harness_server import TOKEN, FakeServer, environment

#: ``ASLEEP``'s ``valid_until`` (07:00 in Shanghai) in epoch seconds.
UNTIL = datetime.fromisoformat(ASLEEP["valid_until"]).timestamp()
#: An hour before it: asked then, the verdict is kept ``max_age`` (60 s).
ASKED_AT = UNTIL - 3600


def hook(
    server: FakeServer, tmp_path: Path, at: float, sent: dict[str, Any] | None = None, **env: str
) -> str:
    return run(
        "claude-code",
        json.dumps(sent or event("claude-code", "UserPromptSubmit")),
        environment(tmp_path, **env),
        transport=server.transport,
        clock=lambda: at,
    )


def spooled(tmp_path: Path, **env: str) -> list[dict[str, Any]]:
    settings = load(environment(tmp_path, **env))
    where = reports.folder(str(tmp_path / "cache" / "curfew"), settings.identity)
    names = sorted(reports.waiting(where))
    return [json.loads((Path(where) / name).read_text()) for name in names]


def test_a_warm_hook_answers_from_the_cache_as_the_server_did(tmp_path: Path) -> None:
    server = FakeServer(verdict=ASLEEP)
    first = hook(server, tmp_path, ASKED_AT)
    again = hook(server, tmp_path, ASKED_AT + 59)
    assert json.loads(first)["decision"] == "block"
    assert again == first
    assert len(server.asked()) == 1


def test_it_asks_again_when_max_age_runs_out(tmp_path: Path) -> None:
    server = FakeServer(verdict=ASLEEP)
    hook(server, tmp_path, ASKED_AT)
    hook(server, tmp_path, ASKED_AT + 60)  # max_age 60: no longer fresh
    assert len(server.asked()) == 2


@pytest.mark.parametrize("max_age", [None, 3600])
def test_the_command_keeps_a_verdict_at_most_its_own_bound(
    max_age: int | None, tmp_path: Path
) -> None:
    server = FakeServer(verdict={**ASLEEP, "max_age": max_age})
    hook(server, tmp_path, ASKED_AT)
    hook(server, tmp_path, ASKED_AT + verdicts.MAX_AGE - 1)
    assert len(server.asked()) == 1
    hook(server, tmp_path, ASKED_AT + verdicts.MAX_AGE)
    assert len(server.asked()) == 2


def test_an_off_duty_verdict_is_never_used_at_or_past_its_valid_until(tmp_path: Path) -> None:
    """The edge: a block read from the cache a millisecond before ``valid_until``,
    the server asked at it (and the next state answered)."""
    server = FakeServer(verdict=ASLEEP)
    hook(server, tmp_path, UNTIL - 30)
    blocked = hook(server, tmp_path, UNTIL - 0.001)
    assert json.loads(blocked)["decision"] == "block"
    assert len(server.asked()) == 1
    server.verdict = WORKING
    assert hook(server, tmp_path, UNTIL) == ""
    assert len(server.asked()) == 2


def test_each_scope_has_its_own_verdict(tmp_path: Path) -> None:
    server = FakeServer(verdict={**WORKING, "valid_until": ASLEEP["valid_until"]})
    hook(server, tmp_path, ASKED_AT)
    hook(server, tmp_path, ASKED_AT, in_subagent("claude-code", "UserPromptSubmit"))
    hook(server, tmp_path, ASKED_AT, event("claude-code", "UserPromptSubmit", session_id="other"))
    hook(server, tmp_path, ASKED_AT, CURFEW_TOKEN="cfw_another_token")
    assert len(server.asked()) == 4
    for sent in (
        event("claude-code", "PreToolUse"),
        in_subagent("claude-code", "PreToolUse"),
        event("claude-code", "PreToolUse", session_id="other"),
    ):
        hook(server, tmp_path, ASKED_AT + 1, sent)
    assert len(server.asked()) == 4  # the same scopes: from the cache


def test_an_outage_s_answer_is_not_kept(tmp_path: Path) -> None:
    server = FakeServer(down=True)
    hook(server, tmp_path, ASKED_AT)
    server.down = False
    server.verdict = ASLEEP
    assert json.loads(hook(server, tmp_path, ASKED_AT + 1))["decision"] == "block"
    assert len(server.asked()) == 2


def test_the_cache_is_private_and_holds_no_token(tmp_path: Path) -> None:
    hook(FakeServer(verdict=ASLEEP), tmp_path, ASKED_AT)
    folder = tmp_path / "cache" / "curfew" / verdicts.FOLDER
    (file,) = folder.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    text = file.read_text()
    assert TOKEN not in text
    assert SESSION not in file.name


def test_a_cache_file_of_another_scope_or_garbage_is_not_used(tmp_path: Path) -> None:
    server = FakeServer(verdict=ASLEEP)
    hook(server, tmp_path, ASKED_AT)
    (file,) = (tmp_path / "cache" / "curfew" / verdicts.FOLDER).iterdir()
    record = json.loads(file.read_text())
    record["scope"][1] = "someone-else"
    file.write_text(json.dumps(record))
    hook(server, tmp_path, ASKED_AT + 1)
    file.write_text("{not json")
    hook(server, tmp_path, ASKED_AT + 2)
    assert len(server.asked()) == 3


def test_a_clock_gone_back_asks_again(tmp_path: Path) -> None:
    server = FakeServer(verdict=ASLEEP)
    hook(server, tmp_path, ASKED_AT)
    hook(server, tmp_path, ASKED_AT - 3600)
    assert len(server.asked()) == 2


# -- the decisions made from the cache ------------------------------------------------


def test_a_decision_from_the_cache_is_spooled_for_the_ledger_and_an_asked_one_is_not(
    tmp_path: Path,
) -> None:
    server = FakeServer(verdict=ASLEEP)
    hook(server, tmp_path, ASKED_AT)  # asked: the server records it itself
    assert spooled(tmp_path) == []
    hook(server, tmp_path, ASKED_AT + 1)
    (report,) = spooled(tmp_path)
    assert report["id"].startswith("hook-")
    assert report["session_id"] == SESSION
    assert report["state"] == "lights-out"
    assert report["action"] == "short-circuit"
    assert report["reason"] == ASLEEP["reason"]
    assert (report["budget_before"], report["budget_after"]) == (None, 0)
    assert datetime.fromisoformat(report["at"]).timestamp() == pytest.approx(ASKED_AT + 1)


def test_a_clamp_from_the_cache_reports_the_clamp(tmp_path: Path) -> None:
    server = FakeServer(verdict={**SLEEPY, "valid_until": ASLEEP["valid_until"]})
    hook(server, tmp_path, ASKED_AT)
    hook(server, tmp_path, ASKED_AT + 1)
    (report,) = spooled(tmp_path)
    assert (report["action"], report["budget_after"]) == ("clamp", SLEEPY["max_tokens"])


def test_decide_names_the_spool_to_send(tmp_path: Path) -> None:
    server = FakeServer(verdict=ASLEEP)
    env = environment(tmp_path)
    raw = json.dumps(event("codex", "PreToolUse"))
    _, pending = decide("codex", raw, env, transport=server.transport, clock=lambda: ASKED_AT)
    assert pending is not None
    settings, where = pending
    assert settings == load(env)
    assert where == reports.folder(str(tmp_path / "cache" / "curfew"), settings.identity)
    stop = json.dumps({**event("codex", "PreToolUse"), "hook_event_name": "Stop"})
    assert decide("codex", stop, env, transport=server.transport)[1] is None


class Ledger:
    """``send`` for ``reports.flush``: answers ``status`` and keeps what it got."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, url: str, token: str, body: bytes) -> int:
        self.sent.append((url, token, json.loads(body)))
        return self.status


def _spool_two(tmp_path: Path) -> tuple[Any, str]:
    server = FakeServer(verdict=ASLEEP)
    for at in (ASKED_AT, ASKED_AT + 1, ASKED_AT + 2):
        hook(server, tmp_path, at)
    settings = load(environment(tmp_path))
    return settings, reports.folder(str(tmp_path / "cache" / "curfew"), settings.identity)


def test_flush_sends_the_spool_with_the_token_and_empties_it(tmp_path: Path) -> None:
    settings, where = _spool_two(tmp_path)
    ledger = Ledger()
    assert reports.flush(settings, where, send=ledger) == 2
    ((url, token, body),) = ledger.sent
    assert url == "http://curfew.test/api/v1/decisions"
    assert token == TOKEN
    assert len(body["decisions"]) == 2
    assert len({report["id"] for report in body["decisions"]}) == 2
    assert reports.waiting(where) == []


@pytest.mark.parametrize("status", [0, 429, 500, 503])
def test_a_failed_flush_keeps_the_spool_and_backs_off(status: int, tmp_path: Path) -> None:
    settings, where = _spool_two(tmp_path)
    now = time.time()
    assert reports.flush(settings, where, send=Ledger(status), now=now) == 0
    assert len(reports.waiting(where)) == 2
    assert reports.backing_off(where, now + reports.RETRY - 1)
    assert not reports.backing_off(where, now + reports.RETRY)
    # The next flush sends the same reports (the same ids: stored once).
    again = Ledger()
    assert reports.flush(settings, where, send=again, now=now + reports.RETRY) == 2
    assert not reports.backing_off(where, now)


def test_a_refused_report_is_dropped_not_retried_forever(tmp_path: Path) -> None:
    settings, where = _spool_two(tmp_path)
    assert reports.flush(settings, where, send=Ledger(401)) == 2
    assert reports.waiting(where) == []


def test_reports_kept_too_long_are_dropped_unsent(tmp_path: Path) -> None:
    settings, where = _spool_two(tmp_path)
    ledger = Ledger()
    assert reports.flush(settings, where, send=ledger, now=time.time() + reports.KEEP + 10) == 0
    assert ledger.sent == []
    assert reports.waiting(where) == []


def test_the_spool_is_private(tmp_path: Path) -> None:
    _, where = _spool_two(tmp_path)
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o700
    for name in reports.waiting(where):
        assert stat.S_IMODE(os.stat(os.path.join(where, name)).st_mode) == 0o600


# -- the command itself: a process, a served ledger ------------------------------------


class _Served(BaseHTTPRequestHandler):
    verdict: ClassVar[dict[str, Any]] = ASLEEP
    decisions: ClassVar[list[dict[str, Any]]] = []
    #: The ledger answers only once this is set.
    release = threading.Event()
    asked: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/api/v1/decisions":
            self.release.wait(30)
            self.decisions.extend(body["decisions"])
            self._answer(200, {"received": len(body["decisions"]), "stored": 0})
        else:
            self.asked.append(self.path)
            self._answer(200, self.verdict)

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_the_command_answers_and_exits_while_its_report_is_still_being_sent(
    tmp_path: Path,
) -> None:
    """A real ``curfew hook`` process against a served ledger that holds its
    answer: the hook's output is complete (its pipes closed) before the ledger
    answers, and the report arrives anyway, from the forked sender."""
    far = {**ASLEEP, "valid_until": "2099-01-01T00:00:00+00:00"}
    _Served.verdict, _Served.decisions, _Served.asked = far, [], []
    _Served.release = threading.Event()
    served = ThreadingHTTPServer(("127.0.0.1", 0), _Served)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            **os.environ,
            **environment(tmp_path, CURFEW_URL=f"http://127.0.0.1:{served.server_port}"),
        }
        command = [sys.executable, "-m", "curfew_cli", "hook", "claude-code"]
        sent = json.dumps(event("claude-code", "UserPromptSubmit"))
        for _ in range(2):  # asked, then from the cache
            done = subprocess.run(
                command, input=sent, env=env, capture_output=True, text=True, timeout=60
            )
            assert json.loads(done.stdout)["decision"] == "block"
        assert _Served.asked == ["/api/v1/verdict"]
        assert _Served.decisions == []  # the ledger has not answered: the hook did not wait
        _Served.release.set()
        deadline = time.monotonic() + 30
        while not _Served.decisions and time.monotonic() < deadline:
            time.sleep(0.05)
        (report,) = _Served.decisions
        assert report["action"] == "short-circuit"
        assert report["session_id"] == SESSION
    finally:
        _Served.release.set()
        served.shutdown()
        served.server_close()


#: Never imported by a warm hook (its whole answer is a file read).
SLOW = (
    "httpx",
    "pydantic",
    "curfew_client",
    "argparse",
    "typing",
    "_hashlib",
    "logging",
    "urllib.request",
)


def test_a_warm_hook_imports_only_the_standard_library_s_light_modules(tmp_path: Path) -> None:
    env = environment(tmp_path, CURFEW_URL="http://127.0.0.1:9")
    settings = load(env)
    cache = str(tmp_path / "cache" / "curfew")
    far = {**ASLEEP, "valid_until": "2099-01-01T00:00:00+00:00"}
    file = verdicts.path(cache, settings.identity, SESSION, False)
    verdicts.write(file, settings.identity, SESSION, False, far, time.time())
    probe = (
        "import io, sys\n"
        "from curfew_cli.main import main\n"
        f"sys.stdin = io.StringIO({json.dumps(json.dumps(event('codex', 'PreToolUse')))})\n"
        "main(['hook', 'codex'])\n"
        f"print(*[name in sys.modules for name in {SLOW!r}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    answer, imported = done.stdout.splitlines()
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert imported == " ".join(["False"] * len(SLOW))
    # Control: with nothing cached it asks the server (urllib's request), and
    # still without httpx, pydantic or the gateway client.
    os.unlink(file)
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    cold = dict(zip(SLOW, done.stdout.splitlines()[-1].split(), strict=True))
    assert cold["urllib.request"] == "True"
    assert (cold["httpx"], cold["pydantic"], cold["curfew_client"]) == ("False",) * 3


def test_a_flusher_finding_another_at_work_leaves_the_spool_to_it(tmp_path: Path) -> None:
    import fcntl

    settings, where = _spool_two(tmp_path)
    holder = os.open(os.path.join(where, ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        ledger = Ledger()
        assert reports.flush(settings, where, send=ledger) == 0  # at once, not waiting
        assert ledger.sent == []
        assert len(reports.waiting(where)) == 2
    finally:
        os.close(holder)
    assert reports.flush(settings, where, send=Ledger()) == 2


def test_reports_spooled_while_a_flusher_sends_are_sent_by_it(tmp_path: Path) -> None:
    settings, where = _spool_two(tmp_path)
    verdict = verdicts.Verdict({**ASLEEP, "valid_until": "2099-01-01T00:00:00+00:00"})

    class Busy(Ledger):
        def __call__(self, url: str, token: str, body: bytes) -> int:
            if not self.sent:  # another hook answers meanwhile
                reports.spool(where, verdict, at=ASKED_AT, session_id=SESSION)
            return super().__call__(url, token, body)

    ledger = Busy()
    assert reports.flush(settings, where, send=ledger) == 3
    assert [len(body["decisions"]) for _, _, body in ledger.sent] == [2, 1]
    assert reports.waiting(where) == []


def test_a_server_nobody_answers_on_passes_by_policy_and_says_so(tmp_path: Path) -> None:
    """The standard library's request, for real: nothing listens on port 9."""
    text = run(
        "claude-code",
        json.dumps(event("claude-code", "UserPromptSubmit")),
        environment(tmp_path, CURFEW_URL="http://127.0.0.1:9"),
        clock=lambda: ASKED_AT,
    )
    said = json.loads(text)["systemMessage"]
    assert "http://127.0.0.1:9/api/v1/verdict is unreachable" in said
    assert "fail_open" in said
    assert TOKEN not in said


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"state": "asleep"}, "answered, but not with a verdict"),
        ({**ASLEEP, "valid_until": "2026-09-30T07:00:00"}, "not with a verdict"),  # no offset
        ({**ASLEEP, "tools": "maybe"}, "not with a verdict"),
    ],
)
def test_an_answer_that_is_no_verdict_is_not_acted_on(
    answer: dict[str, Any], words: str, tmp_path: Path
) -> None:
    out = json.loads(hook(FakeServer(verdict=answer), tmp_path, ASKED_AT))
    assert "decision" not in out  # fail_open: the prompt passes, and the user is told
    assert words in out["systemMessage"]
    assert list((tmp_path / "cache" / "curfew").glob("verdicts/*")) == []


def test_a_hook_forks_no_sender_while_one_is_at_work_or_backing_off(tmp_path: Path) -> None:
    import fcntl

    settings, where = _spool_two(tmp_path)
    holder = os.open(os.path.join(where, ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert reports.kick(settings, where, time.time()) is False
    finally:
        os.close(holder)
    reports.flush(settings, where, send=Ledger(503))  # fails: backs off
    assert reports.kick(settings, where, time.time()) is False
    assert len(reports.waiting(where)) == 2


class _Hostile(BaseHTTPRequestHandler):
    """``trickle``: a byte every 0.2 s for 30 s; ``huge``: 1 MiB of JSON."""

    mode: ClassVar[str] = "trickle"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.mode == "huge":
            body = json.dumps({**ASLEEP, "reason": "x" * (1 << 20)}).encode()
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.end_headers()
        try:
            for _ in range(150):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return  # the hook gave up and closed: what is tested

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("mode", "words"),
    [("trickle", "did not answer within"), ("huge", "not with a verdict (an answer of")],
)
def test_a_server_trickling_or_flooding_its_answer_is_no_verdict(
    mode: str, words: str, tmp_path: Path
) -> None:
    """The hook's own request is bounded: a trickle ends at the deadline (not
    after 30 s), a flood is not read (1 MiB), and the policy answers, said."""
    _Hostile.mode = mode
    served = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    served.daemon_threads = True
    threading.Thread(target=served.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        text = run(
            "codex",
            json.dumps(event("codex", "UserPromptSubmit")),
            environment(tmp_path, CURFEW_URL=f"http://127.0.0.1:{served.server_port}"),
            clock=lambda: ASKED_AT,
        )
        assert time.monotonic() - started < 15  # a bound, not a speed: the trickle is 30 s
        out = json.loads(text)
        assert "decision" not in out
        assert words in out["systemMessage"]
    finally:
        served.shutdown()
        served.server_close()
