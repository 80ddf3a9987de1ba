"""A hook's decisions made from a cached verdict, reported to the server's
decision ledger (``POST /api/v1/decisions``) without the hook waiting.

A verdict the hook asked the server for is recorded by the server itself; a
verdict read from the cache (``curfew_cli.verdicts``) is not, so each of those
decisions is reported here, once:

1. the hook writes the report to a spool file of its own
   (``$XDG_CACHE_HOME/curfew/reports/<server and token>/<id>.json``, mode 600),
   before it answers: a decision is on disk before it is acted on;
2. after answering, it forks a flusher and exits. The flusher (detached: its
   own session, stdin/stdout/stderr on ``/dev/null``, so the harness never
   waits for it) takes the folder's lock or, when another flusher holds it,
   exits at once (that one looks again after letting go); waits ``GATHER``
   seconds, so a burst of hooks makes one request; sends every waiting
   report in batches of ``BATCH`` and deletes each batch the server took
   (2xx) or refused (another 4xx than 429: it would refuse it again). A 5xx, a 429 or
   no answer leaves the files and backs off (``RETRY`` seconds, written in
   the folder, so hooks meanwhile do not fork); the next hook's flusher, or
   the next hook that asks the server, sends them. A hook that finds a
   flusher at work (the lock held) forks none: that one looks again before
   it exits.

Each report has an id (``hook-`` and 16 random hex digits) fixed when it is
spooled, so a batch sent twice (a flusher killed after the server stored it)
is stored once. Reports older than ``KEEP`` seconds are dropped unsent (a
token since revoked, a server gone). The report's shape is the gateway
client's (``curfew_client.reporting.report_of``) for a call without a budget;
``tests/client/test_hook_reports_served.py`` holds it against the server's
``DecisionReport``.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # no ``typing`` at run time: a hook starts this often
if TYPE_CHECKING:
    from typing import Any

    from curfew_cli.config import Settings
    from curfew_cli.verdicts import Verdict

FOLDER = "reports"
#: Reports in one request (the server takes up to 500).
BATCH = 200
#: How long one report request may take (the flusher is off the hook's path).
TIMEOUT = 5.0
#: After a failed report, seconds before a hook forks a flusher again.
RETRY = 30.0
#: Seconds a forked flusher waits before sending: a burst of hooks, one request.
GATHER = 1.0
#: The longest a flusher lives.
LIFETIME = 60
#: Requests one flusher sends at most (a folder it cannot empty is left for the next).
MAX_REQUESTS = 50
#: Reports older than this are dropped unsent.
KEEP = 7 * 24 * 3600.0
MAX_REASON = 500
MAX_SCOPE = 200
USER_AGENT = "curfew-hook/1"


def folder(cache: str, identity: str) -> str:
    return os.path.join(cache, FOLDER, identity)


def report(
    verdict: Verdict, *, at: float, session_id: str | None, decision_id: str
) -> dict[str, Any]:
    """One ``DecisionReport`` for a hook's decision (no budget: a hook asks none)."""
    acts = not verdict.dry_run
    after: int | None = None
    if acts and verdict.action == "clamp":
        after = verdict.max_tokens
    elif acts and verdict.action == "short-circuit":
        after = 0
    found: dict[str, Any] = {
        "id": decision_id,
        "at": _instant(at),
        "state": verdict.state,
        "action": verdict.action,
        "reason": verdict.reason[:MAX_REASON],
        "exempt": verdict.exempt,
        "dry_run": verdict.dry_run,
        "budget_before": None,
        "budget_after": after,
    }
    if session_id is not None:
        found["session_id"] = session_id[:MAX_SCOPE]
    return found


def _instant(at: float) -> str:
    """``at`` in ISO 8601, UTC (``datetime.isoformat``'s form, without importing it)."""
    import time

    whole = int(at // 1)
    micro = int((at - whole) * 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}+00:00"


def spool(where: str, verdict: Verdict, *, at: float, session_id: str | None) -> str | None:
    """Write one report to the spool (mode 600); its id, ``None`` when it could not be written."""
    decision_id = "hook-" + os.urandom(8).hex()
    text = json.dumps(report(verdict, at=at, session_id=session_id, decision_id=decision_id))
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        temporary = os.path.join(where, f".{decision_id}.tmp")
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(handle, text.encode("utf-8"))
        finally:
            os.close(handle)
        os.rename(temporary, os.path.join(where, decision_id + ".json"))
    except OSError:
        return None
    return decision_id


def waiting(where: str) -> list[str]:
    """The spooled reports' file names."""
    try:
        return [name for name in os.listdir(where) if name.endswith(".json")]
    except OSError:
        return []


def backing_off(where: str, now: float) -> bool:
    try:
        with open(os.path.join(where, ".retry"), encoding="ascii") as handle:
            return now < float(handle.read().strip() or 0)
    except (OSError, ValueError):
        return False


def kick(settings: Settings, where: str, now: float) -> bool:
    """Fork the flusher when reports wait and no failure is being backed off
    from; whether one was started. The caller has already answered the harness."""
    if not hasattr(os, "fork") or backing_off(where, now) or not waiting(where):
        return False
    if _at_work(where):
        return False  # a flusher holds the lock: it looks again after letting go
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid:
        return True
    # The flusher: nothing it does may reach the harness, and it never returns.
    try:
        import signal

        signal.alarm(LIFETIME)  # a flusher stuck on a lock or a socket ends anyway
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for descriptor in (0, 1, 2):
            os.dup2(null, descriptor)
        flush(settings, where, gather=GATHER)
    finally:
        os._exit(0)


def _at_work(where: str) -> bool:
    """Whether a flusher holds the folder's lock now (in a burst of hooks,
    most find one gathering: they need not fork another)."""
    import fcntl

    try:
        lock = os.open(os.path.join(where, ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(lock)  # releases it when it was taken here
    return False


def post(url: str, token: str, body: bytes) -> int:
    """``POST`` JSON; the HTTP status (``0``: no answer)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 (the server's own URL, http or https)
        url,
        data=body,
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:  # noqa: S310
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)
    except (OSError, ValueError):
        return 0


def flush(
    settings: Settings,
    where: str,
    *,
    send: Any = post,
    now: float | None = None,
    gather: float = 0.0,
) -> int:
    """Send every spooled report; how many the server took or refused
    (deleted). One flusher at a time: one that finds the folder's lock held
    returns at once (the holder looks again after letting go, so a report
    spooled meanwhile is not left behind). ``gather``: seconds to wait under
    the lock first, so a burst of hooks makes one request. Stops at the first
    failure and writes when to try again."""
    import fcntl
    import time

    done = 0
    try:
        lock = os.open(os.path.join(where, ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return 0
    try:
        for _ in range(MAX_REQUESTS):
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return done  # another flusher holds it, and will see ours
            try:
                if gather:
                    time.sleep(gather)
                sent, failed = _send_all(settings, where, send, time.time() if now is None else now)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
            done += sent
            if failed or not waiting(where):
                return done
        return done
    finally:
        os.close(lock)


def _send_all(settings: Settings, where: str, send: Any, now: float) -> tuple[int, bool]:
    """Send the spool in batches: (reports deleted, whether a request failed)."""
    done = 0
    for _ in range(MAX_REQUESTS):
        batch: list[tuple[str, dict[str, Any]]] = []
        for name in sorted(waiting(where))[:BATCH]:
            file = os.path.join(where, name)
            try:
                with open(file, encoding="utf-8") as handle:
                    item = json.load(handle)
                stale = now - os.stat(file).st_mtime > KEEP
            except (OSError, ValueError):
                item, stale = None, True
            if stale or not isinstance(item, dict):
                _remove(file)
                continue
            batch.append((file, item))
        if not batch:
            return done, False
        body = json.dumps({"decisions": [item for _, item in batch]}).encode("utf-8")
        status = send(f"{settings.api}/decisions", settings.token, body)
        if status == 0 or status == 429 or status >= 500:
            _retry_at(where, now + RETRY)
            return done, True
        for file, _ in batch:  # taken (2xx), or refused for good (4xx)
            _remove(file)
        done += len(batch)
        _remove(os.path.join(where, ".retry"))
    return done, False


def _remove(file: str) -> None:
    try:  # noqa: SIM105 (contextlib is one more import)
        os.unlink(file)
    except OSError:
        pass


def _retry_at(where: str, when: float) -> None:
    try:
        handle = os.open(
            os.path.join(where, ".retry"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
        )
        try:
            os.write(handle, f"{when}\n".encode("ascii"))
        finally:
            os.close(handle)
    except OSError:
        pass
