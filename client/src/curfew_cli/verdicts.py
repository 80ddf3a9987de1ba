"""A hook's verdicts, kept on disk between runs of the command.

Each ``curfew hook`` is a new process, so the gateway client's cache (in
memory) would start empty every time. This one is a file per scope (server
and token, session, subagent) in ``$XDG_CACHE_HOME/curfew/verdicts/``, the
folder mode 700 and each file mode 600, holding the server's verdict as it
answered (JSON) and when it was asked for. A verdict is used while

    now < min(valid_until, fetched_at + max_age, fetched_at + MAX_AGE)

the gateway client's rule (``VerdictCache.store``: ``fetched_at`` taken before
the request was sent), with ``MAX_AGE`` as a bound of the command's own when
the server gives none. So a cached verdict is never used at or after its
``valid_until`` (an off-duty block ends on time), and a save or an override
made on the page reaches the hooks within ``max_age`` (60 s by default,
``CURFEW_VERDICT_MAX_AGE``), as it reaches a gateway without push.

Only the standard library, and only ``json`` and ``os`` beyond what Python
has loaded at its start: a warm hook is a file read.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # no ``typing`` at run time: a hook starts this often
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime
    from typing import Any

#: The longest a verdict is kept when the server gives no ``max_age`` (its own default).
MAX_AGE = 60.0
FOLDER = "verdicts"

STATES = frozenset({"on-duty", "winding", "off-duty", "lights-out"})
ACTIONS = frozenset({"pass", "clamp", "short-circuit"})


class Verdict:
    """The fields of a verdict (``wire.VerdictAnswer``) a hook acts on, and
    where it came from (``origin``: ``server``, ``fail_open``, ``fail_closed``),
    without pydantic."""

    __slots__ = (
        "action",
        "data",
        "dry_run",
        "exempt",
        "local",
        "max_age",
        "max_tokens",
        "origin",
        "persona",
        "reason",
        "reply",
        "state",
        "tools",
        "until",
    )

    def __init__(
        self,
        data: Mapping[str, Any],
        origin: str = "server",
        until: float | None = None,
        local: str | None = None,
    ) -> None:
        self.data = data
        self.origin = origin
        self.state: str = data["state"]
        self.action: str = data["action"]
        self.reply: str | None = data.get("reply")
        self.persona: str | None = data.get("persona")
        self.tools: str = data["tools"]
        self.reason: str = data["reason"]
        self.exempt: bool = bool(data.get("exempt"))
        self.dry_run: bool = bool(data.get("dry_run"))
        self.max_tokens: int | None = data.get("max_tokens")
        self.max_age: int | None = data.get("max_age")
        #: ``valid_until`` as epoch seconds (``until``: already read, as the cache keeps it).
        self.until: float = _epoch(data["valid_until"]) if until is None else until
        #: ``valid_until`` in the user's zone as the cache keeps it (``local_text``).
        self.local = local

    @property
    def short_circuit(self) -> bool:
        return self.action == "short-circuit"

    @property
    def valid_until(self) -> datetime:
        from datetime import datetime

        return datetime.fromisoformat(self.data["valid_until"])

    def local_until(self) -> datetime | None:
        """``valid_until`` in the user's time zone (the verdict's ``timezone``,
        the one its ``reason`` is told in); ``None`` from a server too old to
        say it (the machine's zone is all there is then). A warm hook reads
        the text the cold one wrote: no ``zoneinfo`` import."""
        text = self.local if self.local is not None else local_text(self.data)
        if text is None:
            return None
        from datetime import datetime

        return datetime.fromisoformat(text)


def local_text(data: Mapping[str, Any]) -> str | None:
    """A verdict's ``valid_until`` in its ``timezone`` (``isoformat``, with
    that zone's offset then), or ``None`` when it names no zone this machine
    knows."""
    zone = data.get("timezone")
    if not isinstance(zone, str) or not zone:
        return None
    from datetime import datetime
    from zoneinfo import ZoneInfo

    try:
        return datetime.fromisoformat(data["valid_until"]).astimezone(ZoneInfo(zone)).isoformat()
    except (KeyError, TypeError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None


def _epoch(text: str) -> float:
    from datetime import datetime

    instant = datetime.fromisoformat(text)
    if instant.tzinfo is None:
        raise ValueError("valid_until without its offset")
    return instant.timestamp()


def parse(
    data: object, origin: str = "server", until: object = None, local: object = None
) -> Verdict | None:
    """``data`` (a verdict as JSON) as a ``Verdict``, or ``None`` when it is not
    one. ``until``: its ``valid_until`` in epoch seconds, when known;
    ``local``: the same in the user's zone (``local_text``), when known."""
    if not isinstance(data, dict):
        return None
    try:
        verdict = Verdict(
            data,
            origin,
            float(until) if isinstance(until, (int, float)) else None,
            local if isinstance(local, str) else None,
        )
    except (KeyError, TypeError, ValueError):
        return None
    texts = (verdict.reply, verdict.persona)
    if (
        verdict.state not in STATES
        or verdict.action not in ACTIONS
        or verdict.tools not in ("allow", "deny")
        or not isinstance(verdict.reason, str)
        or any(text is not None and not isinstance(text, str) for text in texts)
        or (verdict.max_age is not None and type(verdict.max_age) is not int)
        or (verdict.max_tokens is not None and type(verdict.max_tokens) is not int)
    ):
        return None
    return verdict


def policy(origin: str, why: str, now: float) -> Verdict:
    """The outage policy's verdict (``fail_open`` passes as on duty,
    ``fail_closed`` is the off-duty short-circuit), as the gateway client's
    ``policy_verdict``: ``reason`` says it was the policy, not the schedule."""
    import time

    closed = origin == "fail_closed"
    data = {
        "state": "off-duty" if closed else "on-duty",
        "action": "short-circuit" if closed else "pass",
        "reply": "。" if closed else None,
        "persona": None,
        "tools": "deny" if closed else "allow",
        "reason": f"curfew server unavailable ({why}) · {origin}",
        "max_tokens": None,
        "max_age": 0,
        "exempt": False,
        "dry_run": False,
        "valid_until": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now)),
    }
    return Verdict(data, origin, until=now)


def path(folder: str, identity: str, session_id: str | None, subagent: bool) -> str:
    """The file of one scope (a hash of it: no session id in a file name)."""
    from curfew_cli.config import sha256

    scope = f"{identity}\n{session_id}\n{int(subagent)}".encode()
    return os.path.join(folder, FOLDER, sha256(scope).hexdigest()[:32] + ".json")


def expires(verdict: Verdict, fetched_at: float) -> float:
    """Until when a verdict asked for at ``fetched_at`` may be used."""
    age = MAX_AGE if verdict.max_age is None else min(float(verdict.max_age), MAX_AGE)
    return min(verdict.until, fetched_at + age)


def read(
    file: str, identity: str, session_id: str | None, subagent: bool, now: float
) -> Verdict | None:
    """The cached verdict of this scope while it may be used; ``None``: ask."""
    try:
        with open(file, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if record.get("scope") != [identity, session_id, subagent]:
        return None  # another scope's (a hash collision) or an old format
    fetched_at = record.get("fetched_at")
    if not isinstance(fetched_at, (int, float)) or now < fetched_at - 5:
        return None  # the clock went back: asking again is the safe answer
    verdict = parse(
        record.get("verdict"), until=record.get("until"), local=record.get("local_until")
    )
    if verdict is None or now >= expires(verdict, float(fetched_at)):
        return None
    return verdict


def write(
    file: str,
    identity: str,
    session_id: str | None,
    subagent: bool,
    verdict: Mapping[str, Any],
    fetched_at: float,
) -> None:
    """Keep a verdict the server answered (replaced at once: another hook
    may be reading it); a cache that cannot be written costs a request, no more."""
    record = {
        "scope": [identity, session_id, subagent],
        "fetched_at": fetched_at,
        # Read once here (the cold path has datetime already): a warm hook
        # that passes then never imports it.
        "until": _epoch(verdict["valid_until"]),
        # And told in the user's zone (``zoneinfo``, here only): a warm hook
        # that says until when reads the text.
        "local_until": local_text(verdict),
        "verdict": verdict,
    }
    replace_private(file, json.dumps(record))


def replace_private(file: str, text: str) -> None:
    """Write ``text`` to ``file`` through a temporary file in the same folder
    (mode 600, the folder 700) renamed over it; errors are swallowed."""
    import tempfile

    try:
        folder = os.path.dirname(file)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".new-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, file)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return
