"""``curfew``: status, hook, login (argparse; the slow imports wait until asked for).

``curfew status`` with its usual options is read without argparse (a status
bar starts it every 300 ms); anything else, ``--help`` included, goes through
the parser, which declares the same choices (``FORMATS``, ``COLORS``).
"""

from __future__ import annotations

import os
import sys

from curfew_cli.config import BadURL, ConfigError, load
from curfew_cli.status import COLORS, FORMATS

TYPE_CHECKING = False  # no ``typing`` at run time (it costs a status bar's start)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence
    from typing import Any, TextIO

#: ``curfew hook TOOL``: the harnesses whose hook events it answers.
HOOK_TOOLS = ("claude-code", "codex")


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="curfew", description="Curfew inside the agent's harness: status, hooks, login."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser(
        "status", help="one line for a status bar: the state and the next change"
    )
    status.add_argument("--format", choices=FORMATS, default=FORMATS[0])
    status.add_argument(
        "--color",
        choices=COLORS,
        default=COLORS[0],
        help="colour the state (auto: only on a terminal)",
    )
    hook = commands.add_parser("hook", help="answer a hook event read on stdin")
    hook.add_argument("tool", choices=HOOK_TOOLS)
    login = commands.add_parser(
        "login", help="store the server's address and a token (read from stdin or a prompt)"
    )
    login.add_argument("url", help="the Curfew server, e.g. https://curfew.example.com")
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    transport: Any = None,
) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    env = os.environ if env is None else env
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    quick = _status_options(words)
    if quick is not None:
        return _status(quick[0], quick[1], env, stdout, transport)
    if len(words) == 2 and words[0] == "hook" and words[1] in HOOK_TOOLS:
        return _hook(words[1], env, stdin, stdout, transport)
    args = _parser().parse_args(words)
    if args.command == "status":
        return _status(args.format, args.color, env, stdout, transport)
    if args.command == "hook":
        return _hook(args.tool, env, stdin, stdout, transport)
    return _login(args.url, env, stdin, stdout, transport)


def _hook(tool: str, env: Mapping[str, str], stdin: TextIO, out: TextIO, transport: Any) -> int:
    """Answer the event on stdin; then, the answer written, fork the sender
    of the decisions made from the cache (``curfew_cli.reports``), unless
    ``transport`` is given (a test's fake server: nothing is forked)."""
    import time

    from curfew_cli.hooks import decide

    text, pending = decide(tool, stdin.read(), env, transport=transport)  # type: ignore[arg-type]
    if text:
        out.write(text + "\n")
    out.flush()
    if pending is not None and transport is None:
        from curfew_cli import reports

        reports.kick(pending[0], pending[1], time.time())
    return 0


def _status_options(words: list[str]) -> tuple[str, str] | None:
    """``(format, color)`` of a ``curfew status`` line the parser would
    accept as it is; ``None``: let the parser read it (help, a mistake)."""
    if not words or words[0] != "status":
        return None
    options = {"--format": FORMATS[0], "--color": COLORS[0]}
    allowed = {"--format": FORMATS, "--color": COLORS}
    rest = words[1:]
    while rest:
        name, equals, value = rest.pop(0).partition("=")
        if name not in allowed:
            return None
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if value not in allowed[name]:
            return None
        options[name] = value
    return options["--format"], options["--color"]


def _status(fmt: str, color: str, env: Mapping[str, str], out: TextIO, transport: Any) -> int:
    from curfew_cli.status import FORMATS, Status, current, render

    try:
        status = current(load(env), env, transport=transport)
    except BadURL:
        status = Status(None, "CURFEW_URL is not http(s)://")
    except ConfigError:
        status = Status(None, "not set up (curfew login URL)")
    colour = color == "always" or (color == "auto" and out.isatty() and "NO_COLOR" not in env)
    shape = next((known for known in FORMATS if known == fmt), FORMATS[0])
    out.write(render(status, shape, colour=colour) + "\n")
    return 0


def _login(url: str, env: Mapping[str, str], stdin: TextIO, out: TextIO, transport: Any) -> int:
    """Read the token (never from the command line: it would sit in the
    shell's history and the process list), check it, store it (mode 600)."""
    from curfew_cli.config import Settings, checked_url, store_login
    from curfew_cli.status import StatusFailure, fetch

    try:
        url = checked_url(url)
    except BadURL as exc:  # file://, ftp://, a path: never asked, never stored
        out.write(f"curfew login: {exc}; nothing stored\n")
        return 2
    if stdin.isatty():
        import getpass

        token = getpass.getpass("Curfew API token: ")
    else:
        token = stdin.readline()
    token = token.strip()
    if not token:
        out.write("curfew login: no token given\n")
        return 2
    try:
        answer = fetch(Settings(url=url, token=token), transport=transport)
    except StatusFailure as exc:
        if str(exc) == "token refused":
            out.write(f"curfew login: {url} refused this token; nothing stored\n")
            return 1
        out.write(f"curfew login: could not check the token ({exc}); stored anyway\n")
        answer = None
    path = store_login(env, url, token)
    said = f" (now: {answer['state']})" if answer else ""
    out.write(f"curfew login: token stored in {path}{said}\n")
    return 0
