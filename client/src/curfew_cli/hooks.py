"""``curfew hook claude-code`` and ``curfew hook codex``: a hook event in, the
tool's documented answer out.

Both tools read the same answer shape (documented in Claude Code's hooks
reference, https://code.claude.com/docs/en/hooks, and Codex's,
https://developers.openai.com/codex/hooks, whose JSON Schemas are published
as ``codex-rs/hooks/schema/generated/*.command.output.schema.json``):

- ``UserPromptSubmit``: ``{"decision": "block", "reason": …}`` keeps the
  prompt from the model and shows the reason; ``hookSpecificOutput.
  additionalContext`` adds text the model reads;
- ``PreToolUse``: ``hookSpecificOutput.permissionDecision: "deny"`` with
  ``permissionDecisionReason`` stops the tool call;
- ``SessionStart`` / ``SubagentStart``: ``hookSpecificOutput.additionalContext``;
- any event: ``systemMessage`` is shown to the user.

Exit status 0 always (a JSON answer is read only then); printing nothing
passes. What to answer is the server's verdict (``POST /api/v1/verdict``,
scoped by the event's ``session_id``; a subagent's event, ``SubagentStart``
or ``SubagentStop`` or any event carrying ``agent_id``, asks as a subagent,
so exemptions hold). Nothing is decided here: the verdict's ``action``,
``persona`` and ``tools`` are acted on as a gateway acts on them.

A verdict the server answered is kept on disk until its ``valid_until`` or
``max_age`` (``curfew_cli.verdicts``): a warm hook reads a file, imports no
httpx or pydantic, and answers in a few milliseconds beyond Python's own
start. Its decision is spooled and sent to the ledger by a forked sender
after the answer is written (``curfew_cli.reports``).

An outage is answered by the client's policy (``CURFEW_POLICY``, default
``fail_open``) and always said to the user in ``systemMessage``: never a
silent pass.
"""

from __future__ import annotations

import json
import time

from curfew_cli.config import ConfigError, Settings, cache_dir, load
from curfew_cli.status import WORDS

TYPE_CHECKING = False  # no ``typing`` at run time: a warm hook is a file read
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime, tzinfo
    from typing import Any, Literal

    from curfew_cli.verdicts import Verdict

    Tool = Literal["claude-code", "codex"]

TOOLS: tuple[Tool, ...] = ("claude-code", "codex")

#: The events a verdict is asked for; any other event is passed without asking.
ASKED_EVENTS = frozenset({"UserPromptSubmit", "PreToolUse", "SessionStart", "SubagentStart"})
#: Events that are a subagent's by their name (any event with ``agent_id`` is too).
SUBAGENT_EVENTS = frozenset({"SubagentStart", "SubagentStop"})
#: Events whose answer may add context for the model at their start.
START_EVENTS = frozenset({"SessionStart", "SubagentStart"})
#: How long a hook waits for the server (the gateway client's default).
TIMEOUT = 0.5


class Asked:
    """The verdict for the event, and what went wrong getting it (``None``:
    the server answered, or the cache did: ``cached``), in words for the user."""

    __slots__ = ("cached", "trouble", "verdict")

    def __init__(self, verdict: Verdict, trouble: str | None = None, *, cached: bool = False):
        self.verdict = verdict
        self.trouble = trouble
        self.cached = cached


def scope(event: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``(session_id, subagent)`` of a hook event."""
    session = event.get("session_id")
    session_id = session[:200] if isinstance(session, str) and session.strip() else None
    name = event.get("hook_event_name")
    subagent = name in SUBAGENT_EVENTS or bool(event.get("agent_id"))
    return session_id, subagent


def when(instant: datetime, *, now: datetime | None, tz: tzinfo | None = None) -> str:
    """``07:00`` in ``tz`` (``Mon 07:00`` when not that day there; ``now``: the clock's)."""
    if now is None:
        from datetime import datetime

        now = datetime.now().astimezone()
    local = instant.astimezone(tz)
    if local.date() != now.astimezone(tz).date():
        return local.strftime("%a %H:%M")
    return local.strftime("%H:%M")


def _reply_words(verdict: Verdict) -> str:
    reply = (verdict.reply or "").strip()
    # The default canned reply is a lone "。": said to a model, not to a person.
    return f" {reply}" if len(reply) > 1 else ""


def block_reason(asked: Asked, *, now: datetime | None, tz: tzinfo | None = None) -> str:
    """Why the prompt is held back, and until when (``tz``: the machine's zone)."""
    verdict = asked.verdict
    if verdict.origin == "fail_closed":
        return (
            "Curfew could not be asked and its policy is fail_closed, so this prompt "
            f"is held back. {asked.trouble or ''}".strip()
        )
    word = WORDS.get(verdict.state, verdict.state)
    # In the user's zone, the one the server's reason is told in (issue 42);
    # the machine's (``tz``) only when an older server does not say it.
    local = verdict.local_until()
    if local is None:
        until = when(verdict.valid_until, now=now, tz=tz)
    else:
        until = when(local, now=now, tz=local.tzinfo)
    return f"Curfew: your AI is {word} until {until}.{_reply_words(verdict)} ({verdict.reason})"


def tools_reason(verdict: Verdict) -> str:
    word = WORDS.get(verdict.state, verdict.state)
    return f"Curfew: no tools while your AI is {word} ({verdict.reason})."


def answer(
    tool: Tool,
    event: Mapping[str, Any],
    asked: Asked,
    *,
    status_line: str | None = None,
    now: datetime | None = None,
    tz: tzinfo | None = None,
) -> dict[str, Any] | None:
    """The hook's answer to ``event`` in ``tool``'s documented output, or
    ``None`` (print nothing: the event passes untouched). ``status_line``:
    the state and next change in words, for a start event's context."""
    del tool  # both tools document the same shapes (see the module's docstring)
    name = str(event.get("hook_event_name") or "")
    verdict = asked.verdict
    out: dict[str, Any] = {}
    if name == "UserPromptSubmit":
        if verdict.short_circuit:
            out.update(decision="block", reason=block_reason(asked, now=now, tz=tz))
        elif verdict.persona:
            out["hookSpecificOutput"] = {
                "hookEventName": name,
                "additionalContext": verdict.persona,
            }
    elif name == "PreToolUse":
        if verdict.short_circuit or verdict.tools == "deny":
            out["hookSpecificOutput"] = {
                "hookEventName": name,
                "permissionDecision": "deny",
                "permissionDecisionReason": (
                    block_reason(asked, now=now, tz=tz)
                    if verdict.short_circuit
                    else tools_reason(verdict)
                ),
            }
    elif name in START_EVENTS:
        plain = verdict.action == "pass" and not verdict.persona and verdict.tools == "allow"
        if not plain and verdict.origin == "server":
            said = status_line or WORDS.get(verdict.state, verdict.state)
            context = f"Curfew: your AI is {said}. ({verdict.reason})"
            if verdict.persona:
                context += f"\n\n{verdict.persona}"
            out["hookSpecificOutput"] = {"hookEventName": name, "additionalContext": context}
    if asked.trouble is not None:
        trouble = asked.trouble
        out["systemMessage"] = trouble if trouble.startswith("Curfew") else f"Curfew: {trouble}"
    return out or None


def ask(
    settings: Settings,
    *,
    session_id: str | None,
    subagent: bool,
    transport: Any = None,
    cache: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Asked:
    """The verdict: from the cache folder ``cache`` while fresh (see
    ``curfew_cli.verdicts``), else asked of the server (``POST
    /api/v1/verdict``, the standard library's HTTP, no httpx or pydantic: a
    cold hook is a request, not 0.3 s of imports), its answer checked
    (``verdicts.parse``) and kept. Only a verdict the server answered is kept;
    the server records it, and a verdict read from the cache is reported by
    ``decide``. No verdict: the outage policy answers, and ``trouble`` says
    why. ``transport``: a test's fake server (httpx's ``MockTransport``)."""
    from curfew_cli import verdicts

    file = None
    if cache is not None:
        file = verdicts.path(cache, settings.identity, session_id, subagent)
        found = verdicts.read(file, settings.identity, session_id, subagent, clock())
        if found is not None:
            return Asked(found, cached=True)
    body: dict[str, Any] = {"subagent": subagent}
    if session_id is not None:
        body["session_id"] = session_id
    url = f"{settings.api}/verdict"
    fetched_at = clock()  # before the request: a slow answer only shortens freshness
    try:
        status, content = _post(url, settings.token, json.dumps(body).encode(), transport)
    except TimeoutError:
        why = f"did not answer within {TIMEOUT:g} s"
    except TooLarge as exc:
        why = f"answered, but not with a verdict ({exc})"
    except (OSError, ValueError) as exc:
        why = f"is unreachable ({_reason(exc)})"
    else:
        refused = _refused(status, content)
        why = refused or ""
        if refused is None:
            try:
                data = json.loads(content)
            except (ValueError, RecursionError):
                data = None
            verdict = verdicts.parse(data)
            if verdict is not None:
                if file is not None:
                    verdicts.write(file, settings.identity, session_id, subagent, data, fetched_at)
                return Asked(verdict)
            why = "answered, but not with a verdict"
    policy = settings.policy
    applied = "this passes unchecked" if policy == "fail_open" else "this is held back"
    return Asked(
        verdicts.policy(policy, why, clock()),
        f"Curfew server {url} {why}. Policy {policy}: {applied}",
    )


def _post(url: str, token: str, body: bytes, transport: Any) -> tuple[int, bytes]:
    """``POST`` JSON: the status and the answer's bytes. ``OSError``
    (``TimeoutError``) when nothing answered."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "User-Agent": "curfew-hook/1",
    }
    if transport is not None:
        import httpx

        try:
            with httpx.Client(transport=transport, timeout=TIMEOUT) as http:
                answer = http.post(url, content=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise ConnectionError(type(exc).__name__) from exc
        return answer.status_code, answer.content
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + TIMEOUT
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:  # noqa: S310
            return int(answer.status), _bounded(answer, deadline)
    except urllib.error.HTTPError as refused:
        return int(refused.code), _bounded(refused, deadline)
    except urllib.error.URLError as failed:
        if isinstance(failed.reason, TimeoutError):
            raise failed.reason from failed
        raise


class TooLarge(ValueError):
    """An answer longer than ``MAX_ANSWER``: not read to its end."""


#: The longest answer read (the gateway client's bound): a verdict is about 1 KiB.
MAX_ANSWER = 256 * 1024


def _bounded(answer: Any, deadline: float) -> bytes:
    """The answer's body, at most ``MAX_ANSWER`` bytes and no read begun
    after ``deadline`` (each read is bounded by the socket's timeout, so a
    server trickling a byte at a time holds the hook for one more read, not
    until the harness gives up on it)."""
    declared = answer.headers.get("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_ANSWER:
        raise TooLarge(f"an answer of {declared} bytes")
    body = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the answer kept coming past {TIMEOUT:g} s")
        chunk = answer.read1(16384) if hasattr(answer, "read1") else answer.read(16384)
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > MAX_ANSWER:
            raise TooLarge(f"an answer longer than {MAX_ANSWER} bytes")


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return type(reason).__name__ if isinstance(reason, BaseException) else type(exc).__name__


def _refused(status: int, content: bytes) -> str | None:
    """Why an answer is no verdict, in words (``None``: HTTP 200)."""
    if status == 200:
        return None
    if status in (401, 403):
        return f"refused the token (HTTP {status})"
    said = ""
    try:
        error = json.loads(content)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            said = f": {error.get('error')}: {error['message'][:160]}"
    except (ValueError, RecursionError):
        said = " (not Curfew's JSON)"
    return f"answered HTTP {status}{said}"


def run(
    tool: Tool,
    raw: str,
    env: Mapping[str, str],
    *,
    transport: Any = None,
    now: datetime | None = None,
    tz: tzinfo | None = None,
    clock: Callable[[], float] = time.time,
) -> str:
    """The text to print for the hook event ``raw`` (``""``: nothing). A
    decision made from the cache is spooled for the ledger, not sent
    (``decide`` says where; the command forks the sender after answering)."""
    return decide(tool, raw, env, transport=transport, now=now, tz=tz, clock=clock)[0]


def decide(
    tool: Tool,
    raw: str,
    env: Mapping[str, str],
    *,
    transport: Any = None,
    now: datetime | None = None,
    tz: tzinfo | None = None,
    clock: Callable[[], float] = time.time,
) -> tuple[str, tuple[Settings, str] | None]:
    """``run``'s text, and the settings and spool folder whose reports wait
    to be sent (``None``: nothing to send)."""
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):  # nested past Python's stack: no event either
        event = None
    if not isinstance(event, dict):
        return _said("the hook's event was not JSON, so this passes unchecked"), None
    if event.get("hook_event_name") not in ASKED_EVENTS:
        return "", None
    try:
        settings = load(env)
    except ConfigError as exc:
        return _said(f"{exc}. This passes unchecked."), None
    from curfew_cli import reports

    cache = cache_dir(env)
    session_id, subagent = scope(event)
    asked = ask(
        settings,
        session_id=session_id,
        subagent=subagent,
        transport=transport,
        cache=cache,
        clock=clock,
    )
    spool = reports.folder(cache, settings.identity)
    if asked.cached:
        # Before answering: a decision is on disk before it is acted on.
        reports.spool(spool, asked.verdict, at=clock(), session_id=session_id)
    status_line = None
    if event.get("hook_event_name") in START_EVENTS and asked.trouble is None:
        status_line = _status_line(settings, env, transport=transport)
    # ``now`` is read only to say until when (no ``datetime`` import otherwise).
    found = answer(tool, event, asked, status_line=status_line, now=now, tz=tz)
    text = "" if found is None else json.dumps(found, ensure_ascii=False)
    return text, (settings, spool)


def _said(message: str) -> str:
    return json.dumps({"systemMessage": f"Curfew: {message}"}, ensure_ascii=False)


def _status_line(settings: Settings, env: Mapping[str, str], *, transport: Any) -> str | None:
    from curfew_cli.status import current, render

    status = current(settings, env, transport=transport)
    return render(status) if status.known else None
