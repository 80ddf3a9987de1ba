"""Walks: the functions of ``curfew_core`` one request passes through, in order (issue 43).

    python -m bench.walks [--tree DIR] [--before DIR] [--write]

Three requests, each made in this process against the site's own ASGI app or
Django's test client on a throwaway SQLite database, with a profile hook
that records every function of ``curfew_core`` entered (a coroutine's or a
generator's resumption is not an entry):

- **verdict**: a warm ``POST /api/v1/verdict`` (the same token asked once before);
- **proxy chat**: a ``POST /v1/chat/completions`` on duty, passed to a local
  recording fake of the provider and answered;
- **page save**: the Schedule page's form posted back with one setting changed.

For each it prints how many functions were entered, how many distinct ones,
in how many modules and folders, and the walk itself: each function at the
depth of its first entry among ``curfew_core``'s frames, with how many times it
was entered. ``--tree DIR`` walks another checkout's code; ``--before DIR``
walks that checkout first (an older commit in a ``git worktree``, e.g.
``git worktree add ../before ffb324b``), then this one: before and after, by
one command. ``--write`` writes the run to ``docs/benchmarks/walks.md``.

A walk is measured, not read: it shows the code a request really runs, on
this machine's settings (SQLite, the in-memory cache), which is what a
newcomer steps through in a debugger.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks" / "walks.md"
#: Code flags of a frame that is resumed, not entered, at its later "call" events.
RESUMABLE = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


def _name(prefix: str, frame: FrameType) -> str:
    code = frame.f_code
    where = code.co_filename[len(prefix) :].removesuffix(".py").replace("/", ".")
    return f"{where}:{code.co_qualname}"


@dataclass
class Walk:
    """Every entry into a function under ``prefix``, with the function of
    ``curfew_core`` it was entered from (``None``: from outside, or from a
    frame entered before the walk began)."""

    prefix: str
    entries: list[tuple[str | None, str]] = field(default_factory=list)
    started: dict[int, FrameType] = field(default_factory=dict)
    on: bool = False

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.on:
            return
        code = frame.f_code
        if not code.co_filename.startswith(self.prefix):
            return
        if code.co_flags & RESUMABLE:
            if id(frame) in self.started:
                return  # a generator or coroutine resumed, not entered
            self.started[id(frame)] = frame  # held, so that its id is not reused
        outer = frame.f_back
        while outer is not None and not outer.f_code.co_filename.startswith(self.prefix):
            outer = outer.f_back
        parent = None if outer is None else _name(self.prefix, outer)
        self.entries.append((parent, _name(self.prefix, frame)))

    def tree(self) -> list[str]:
        """Each function once, under the function its first entry came from,
        with how many times it was entered."""
        counts: dict[str, int] = {}
        children: dict[str | None, list[str]] = {}
        for parent, name in self.entries:
            if name not in counts:
                children.setdefault(parent, []).append(name)
            counts[name] = counts.get(name, 0) + 1
        roots = [
            name for parent, names in children.items() if parent not in counts for name in names
        ]
        lines: list[str] = []

        def visit(name: str, depth: int) -> None:
            times = f" ×{counts[name]}" if counts[name] > 1 else ""
            lines.append("  " * depth + name + times)
            for child in children.get(name, []):
                visit(child, depth + 1)

        for root in roots:
            visit(root, 0)
        return lines

    def figures(self) -> dict[str, int]:
        names = {name for _, name in self.entries}
        modules = {name.split(":")[0] for name in names}
        folders = {module.rsplit(".", 1)[0] if "." in module else "" for module in modules}
        return {
            "entered": len(self.entries),
            "functions": len(names),
            "modules": len(modules),
            "folders": len(folders),
        }


def walked(walk: Walk, request: Callable[[], Any]) -> Any:
    walk.entries.clear()
    walk.started.clear()
    walk.on = True
    try:
        return request()
    finally:
        walk.on = False


def setup(tree: Path, database: Path, upstream: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["CURFEW_UPSTREAM_BASE_URL"] = f"{upstream}/v1"
    os.environ["CURFEW_UPSTREAM_API_KEY"] = "sk-walks"
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.pop("REDIS_URL", None)
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)


def requests(walk: Walk) -> dict[str, Walk]:
    """Make the three requests, each walked; the answers must be right."""
    from datetime import datetime as dt
    from zoneinfo import ZoneInfo

    from django.contrib.auth.models import User
    from django.test import Client
    from django.utils import timezone

    from curfew_core.schedules import override_commands
    from curfew_core.services.overrides import override_apply
    from curfew_core.services.tokens import token_create
    from curfew_testkit.asgi_client import AsyncClient
    from tests.web.forms import as_post, form_fields

    user = User.objects.create_user("walker")
    _, raw = token_create(user=user, name="walks")
    on_duty = dt(2026, 9, 29, 20, 0, tzinfo=ZoneInfo("Asia/Shanghai")).isoformat()
    override_apply(
        user=user, command=override_commands.from_json({"debug": on_duty}), now=timezone.now()
    )
    bearer = {"Authorization": f"Bearer {raw}"}
    edge = AsyncClient()
    from asgiref.sync import async_to_sync

    def verdict() -> Any:
        return async_to_sync(edge.post)(
            "/api/v1/verdict",
            {"max_tokens": 1024, "session_id": "walk"},
            content_type="application/json",
            headers=bearer,
        )

    out: dict[str, Walk] = {}
    cold = verdict()  # the cold one, not walked
    assert cold.status_code == 200, cold.content
    answer = walked(walk, verdict)
    assert answer.status_code == 200, answer.content
    out["verdict"] = Walk(walk.prefix, list(walk.entries))

    def chat() -> Any:
        async def call() -> bytes:
            response = await edge.post(
                "/v1/chat/completions",
                {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                content_type="application/json",
                headers=bearer,
            )
            if getattr(response, "streaming", False):
                return b"".join([chunk async for chunk in response.streaming_content])  # type: ignore[attr-defined]
            return bytes(response.content)

        return async_to_sync(call)()

    chat()  # the first call opens the pool
    body = walked(walk, chat)
    assert b"chat.completion" in body, body[:300]
    out["proxy chat"] = Walk(walk.prefix, list(walk.entries))

    page = Client()
    page.force_login(user)
    fields = form_fields(page.get("/schedule/").content.decode(), "schedule-form")
    data = as_post(fields, curfew_start="22:30")
    saved = walked(walk, lambda: page.post("/schedule/", data))
    assert saved.status_code in (200, 302, 303), saved.status_code
    out["page save"] = Walk(walk.prefix, list(walk.entries))
    return out


def revision(tree: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True
    ).stdout.strip()


def run(tree: Path) -> str:
    """The three walks of ``tree``'s code, as Markdown."""
    sys.path.insert(0, str(tree))
    from curfew_testkit.fake_upstream import FakeUpstream

    walk = Walk(str(tree / "curfew_core") + "/")
    upstream = FakeUpstream().start()
    with tempfile.TemporaryDirectory() as folder:
        setup(tree, Path(folder) / "walks.sqlite3", upstream.base_url)
        sys.setprofile(walk.hook)
        threading.setprofile(walk.hook)
        try:
            walks = requests(walk)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
            upstream.stop()
    lines = [
        f"### {revision(tree)}",
        "",
        "| request | functions entered | distinct functions | modules | folders |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, one in walks.items():
        figures = one.figures()
        lines.append(
            f"| {name} | {figures['entered']} | {figures['functions']} | {figures['modules']} "
            f"| {figures['folders']} |"
        )
    for name, one in walks.items():
        lines += ["", f"<details><summary>{name}: the walk</summary>", "", "```"]
        lines += one.tree()
        lines += ["```", "", "</details>"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code walks")
    parser.add_argument("--before", type=Path, help="a checkout walked first, in its own process")
    parser.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    args = parser.parse_args()
    parts = []
    if args.before:
        parts.append(
            subprocess.run(
                [sys.executable, __file__, "--tree", str(args.before.resolve())],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
    parts.append(run(args.tree.resolve()))
    text = "\n\n".join(parts)
    print(text)
    if args.write:
        PAGE.write_text(
            "# `bench/walks.py`\n\n"
            "Written by `python -m bench.walks --before DIR --write`, not by hand: the\n"
            "functions of `curfew_core` each request enters, on SQLite and the in-memory\n"
            f"cache, before (the first commit) and after, on {datetime.now(UTC):%Y-%m-%d}.\n\n"
            + text
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
