"""``curfew status``: the state in the user's words and the next change, one line.

``sleepy · budget 560 · asleep at 03:00``. Read from ``GET /api/v1/state``
(the wire's ``StateAnswer``) and kept in ``$XDG_CACHE_HOME/curfew/status.lines``
until the state's ``valid_until`` (the next instant anything in it changes)
or ``MAX_AGE`` seconds (saves and overrides are not predictable), so a status
bar may run the command every 300 ms: a fresh answer costs a file read, and
imports nothing beyond the standard library (no httpx, no pydantic).

The next change is read from the answer's ``day`` (the engine's plan of the
local day, a team member's with the team's night, harsher wins): the first
segment after now in another state, or an override's end. Nothing is
re-derived from the schedule's rules.

The cache holds the line already rendered in every form the command prints
(``status.lines``: a few lines of text, see ``write_lines``), so a warm
``curfew status`` reads a small file and prints one of its lines: no
``json`` (which imports ``re``, about 10 ms of a 30 ms budget), no ``enum``.
"""

from __future__ import annotations

# The cached path imports only os and time (no json, re, enum, dataclasses,
# pathlib, tempfile or typing at run time): a status bar starts this every 300 ms.
import os
import time

TYPE_CHECKING = False  # no ``typing`` at run time: a status bar starts this often
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    from curfew_cli.config import Settings

    Format = Literal["plain", "json", "tmux"]

FORMATS: tuple[Format, ...] = ("plain", "json", "tmux")
#: ``--color``: ``auto`` colours only on a terminal.
COLORS = ("auto", "always", "never")

#: The states in the user's words (the wire keeps its names: ``winding``...).
WORDS: dict[str, str] = {
    "on-duty": "working",
    "winding": "sleepy",
    "off-duty": "off duty",
    "lights-out": "asleep",
}
#: Each state's colour: ANSI (a terminal) and tmux's names.
ANSI: dict[str, str] = {"on-duty": "32", "winding": "33", "off-duty": "34", "lights-out": "35"}
TMUX: dict[str, str] = {
    "on-duty": "green",
    "winding": "yellow",
    "off-duty": "blue",
    "lights-out": "magenta",
}
#: The longest a state is kept without asking (the verdict's ``max_age`` default).
MAX_AGE = 60.0
#: After a failed request, how long the status says so without asking again.
RETRY = 10.0
#: How long the server may take (a status bar waits for it).
TIMEOUT = 1.0
#: The rendered lines and until when they may be shown (see ``write_lines``).
CACHE_FILE = "status.lines"
#: The cache file's first line (another layout is not read: it is asked again).
CACHE_MAGIC = "curfew-status 1"


class Status:
    """What the line shows: ``summary`` (see ``summarize``) or ``error``; read
    from the cache, ``lines``: the line already rendered (``SHAPES``' order)."""

    __slots__ = ("cached", "error", "lines", "summary")

    def __init__(
        self,
        summary: dict[str, Any] | None,
        error: str | None = None,
        *,
        cached: bool = False,
        lines: tuple[str, ...] | None = None,
    ) -> None:
        self.summary = summary
        self.error = error
        self.cached = cached
        self.lines = lines

    @property
    def known(self) -> bool:
        """Whether it says a state (not an error)."""
        return self.error is None and (self.summary is not None or self.lines is not None)


def _instant(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text)


def _segment_state(day: list[Mapping[str, Any]], hhmm: str) -> str | None:
    for segment in day:
        if segment["start"] <= hhmm < segment["end"]:
            return str(segment["state"])
    return None


def next_change(answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"state", "at"}`` (``at``: local ``HH:MM``) of the next change of
    state the answer's plan shows, ``state`` ``None`` when the plan does not
    say (an override ending tomorrow); ``None`` when nothing changes today."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(str(answer["timezone"]))
    now = _instant(answer["at"]).astimezone(zone)
    day = list(answer["day"])
    if answer.get("override") is not None:
        until = answer.get("override_until")
        if until is None:
            return None
        end = _instant(until).astimezone(zone)
        hhmm = end.strftime("%H:%M")
        state = _segment_state(day, hhmm) if end.date() == now.date() else None
        return {"state": state, "at": hhmm}
    hhmm = now.strftime("%H:%M")
    for segment in day:
        if segment["start"] > hhmm and segment["state"] != answer["state"]:
            return {"state": str(segment["state"]), "at": str(segment["start"])}
    return None


def summarize(answer: Mapping[str, Any]) -> dict[str, Any]:
    """What the line needs from a ``StateAnswer`` (as JSON), computed once per fetch."""
    return {
        "state": answer["state"],
        "budget": answer["budget"] if answer["state"] == "winding" else None,
        "override": answer["override"],
        "next": next_change(answer),
        "dry_run": answer["dry_run"],
        "enabled": answer["enabled"],
        "reason": answer["reason"],
    }


def words(summary: Mapping[str, Any]) -> list[str]:
    """The line's parts in the user's words, the state first."""
    state = str(summary["state"])
    if not summary.get("enabled", True):
        return ["curfew off"]
    parts = [WORDS.get(state, state)]
    if summary.get("override") == "overtime":
        parts.append("overtime")
    if summary.get("budget") is not None:
        parts.append(f"budget {summary['budget']}")
    upcoming = summary.get("next")
    if upcoming:
        after = upcoming.get("state")
        parts.append(
            f"{WORDS.get(after, after)} at {upcoming['at']}" if after else f"until {upcoming['at']}"
        )
    if summary.get("dry_run"):
        parts.append("only watching")
    return parts


def render(status: Status, fmt: Format = "plain", *, colour: bool = False) -> str:
    """The line in ``fmt``: ``plain`` (ANSI colour with ``colour``), ``tmux``
    (its ``#[fg=…]`` markup), or ``json`` (``state``, ``line``, ``budget``,
    ``next``, ``error``, ``cached``)."""
    if status.lines is not None:
        return status.lines[SHAPES.index((fmt, colour and fmt == "plain"))]
    summary = status.summary
    if summary is None:
        line = f"curfew: {status.error or 'unknown'}"
        if fmt == "json":
            import json

            return json.dumps({"state": None, "line": line, "error": status.error})
        return line
    parts = words(summary)
    line = " · ".join(parts)
    if fmt == "json":
        import json

        return json.dumps(
            {
                "state": summary["state"],
                "words": parts[0],
                "line": line,
                "budget": summary.get("budget"),
                "next": summary.get("next"),
                "override": summary.get("override"),
                "dry_run": summary.get("dry_run"),
                "error": None,
                "cached": status.cached,
            },
            ensure_ascii=False,
        )
    state = str(summary["state"])
    rest = "".join(f" · {part}" for part in parts[1:])
    if fmt == "tmux" and state in TMUX:
        return f"#[fg={TMUX[state]}]{parts[0]}#[default]{rest}"
    if colour and state in ANSI:
        return f"\x1b[{ANSI[state]}m{parts[0]}\x1b[0m{rest}"
    return line


# -- the cache ------------------------------------------------------------------

#: The forms a cached line is kept in, in the file's order: (format, colour).
SHAPES: tuple[tuple[Format, bool], ...] = (
    ("plain", False),
    ("plain", True),
    ("tmux", False),
    ("json", False),
)


def read_cache(path: str, identity: str, now: float) -> Status | None:
    """The cached status while it may still be shown (fresh, or a failure
    still backing off); ``None``: ask the server. Plain text, split on
    newlines: no ``json`` (nor the ``re`` and ``enum`` it imports)."""
    try:
        with open(path, "rb") as file:
            text = file.read(65536).decode("utf-8")
    except (OSError, ValueError):
        return None
    fields = text.split("\n")
    # magic, identity, until, error, the lines, and the last newline's empty tail.
    if len(fields) != 5 + len(SHAPES) or fields[0] != CACHE_MAGIC or fields[-1]:
        return None
    if fields[1] != identity:
        return None
    try:
        until = float(fields[2])
    except ValueError:
        return None
    if not now < until:  # NaN too
        return None
    error = fields[3] or None
    return Status(None, error, cached=True, lines=tuple(fields[4:-1]))


def write_lines(path: str, identity: str, status: Status, until: float) -> None:
    """Keep ``status`` (a state or an error) until ``until`` (epoch seconds),
    rendered as a warm ``curfew status`` shows it (``cached``: its JSON says
    so). A line with a line break in it (no answer the wire accepts has one)
    is not kept: it is asked again."""
    shown = Status(status.summary, status.error, cached=True)
    lines = [render(shown, fmt, colour=colour) for fmt, colour in SHAPES]
    error = status.error or ""
    if not status.known and not error:
        error = "unknown"
    if any("\n" in line or "\r" in line for line in [error, *lines]):
        return
    write_cache(path, "\n".join([CACHE_MAGIC, identity, repr(until), error, *lines, ""]))


def write_cache(path: str, text: str) -> None:
    """Replace the cache file at once (a status bar may read it meanwhile)."""
    import tempfile

    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".status-")
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8"))
        os.replace(temporary, path)
    except OSError:
        return  # a status bar without a cache still shows the state


def fetch(settings: Settings, *, transport: Any = None) -> dict[str, Any]:
    """``GET /api/v1/state``, checked by the wire's own model. Raises
    ``StatusFailure`` naming what went wrong in a few words."""
    import httpx

    from curfew_client.transport import BadAnswer, ask_headers, read_answer
    from curfew_client.wire import StateAnswer

    url, headers = f"{settings.api}/state", ask_headers(settings.token)
    try:
        # Bounded (issue 41): a server trickling its answer a byte at a time
        # would hold every status bar's process; a huge one, their memory.
        with (
            httpx.Client(timeout=TIMEOUT, transport=transport) as http,
            http.stream("GET", url, headers=headers) as response,
        ):
            status = response.status_code
            length = response.headers.get("Content-Length")
            deadline = time.monotonic() + TIMEOUT
            content = read_answer(response.iter_bytes(), length=length, deadline=deadline)
    except (httpx.HTTPError, TimeoutError) as exc:
        raise StatusFailure("unreachable") from exc
    except BadAnswer as exc:
        raise StatusFailure("not a Curfew server") from exc
    if status in (401, 403):
        raise StatusFailure("token refused")
    if status != 200:
        raise StatusFailure(f"server answered HTTP {status}")
    try:
        answer = StateAnswer.model_validate_json(content).model_dump(mode="json")
        # Usable, not only well-typed: an unknown zone or an instant in the
        # year 10000 is no answer (it raised out of ``curfew status``).
        summarize(answer)
        _instant(answer["valid_until"]).timestamp()
    except (ValueError, KeyError, OverflowError) as exc:  # ZoneInfoNotFoundError: a KeyError
        raise StatusFailure("not a Curfew server") from exc
    return answer


class StatusFailure(Exception):
    """The state could not be had (the message is the status line's words)."""


def current(
    settings: Settings, env: Mapping[str, str], *, now: float | None = None, transport: Any = None
) -> Status:
    """The status: from the cache while fresh, else asked (and cached)."""
    from curfew_cli.config import cache_dir

    now = time.time() if now is None else now
    path = os.path.join(cache_dir(env), CACHE_FILE)
    cached = read_cache(path, settings.identity, now)
    if cached is not None:
        return cached
    try:
        answer = fetch(settings, transport=transport)
    except StatusFailure as exc:
        failed = Status(None, str(exc))
        write_lines(path, settings.identity, failed, now + RETRY)
        return failed
    valid_until = _instant(answer["valid_until"]).timestamp()
    found = Status(summarize(answer))
    write_lines(path, settings.identity, found, min(valid_until, now + MAX_AGE))
    return found
