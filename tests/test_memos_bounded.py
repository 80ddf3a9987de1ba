"""No memo in ``curfew_core`` is emptied whole when full (issue 40).

A process-wide memo bounded by ``if len(memo) >= N: memo.clear()`` forgets
every entry at once: a pass through more keys than it holds (10,000 users
through 4,096) misses every time. The memos are bounded, least recently used
maps instead (``cachetools.LRUCache``; ``functools.lru_cache`` in the
stdlib-only engine), which drop one entry at a time. This test finds the old
shape in the source, so it cannot come back unnoticed.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cachetools import LRUCache

import curfew_core
from curfew_core.engine import Schedule

ROOT = Path(curfew_core.__file__).parent


def _sized(test: ast.expr) -> set[str]:
    """The expressions whose ``len`` a condition compares with ``>=`` or ``>``
    (``len(a) >= N``, ``len(a) + len(b) > N``), as source text."""
    if not isinstance(test, ast.Compare) or not any(
        isinstance(op, ast.GtE | ast.Gt) for op in test.ops
    ):
        return set()
    return {
        ast.unparse(node.args[0])
        for node in ast.walk(test.left)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
    }


def _cleared(body: list[ast.stmt]) -> set[str]:
    """The expressions ``body`` calls ``.clear()`` on, as source text, when
    that is all it does (a batch sent on, then cleared, is no memo)."""
    cleared = set()
    for statement in body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "clear"
            and not call.args
        ):
            return set()
        cleared.add(ast.unparse(call.func.value))
    return cleared


def emptied_when_full(source: str, name: str = "<source>") -> list[str]:
    """Each place in ``source`` where a memo is emptied whole when full:
    ``if len(X) >= N`` (or ``>``) whose body only calls ``X.clear()``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If | ast.While):
            for memo in sorted(_sized(node.test) & _cleared(node.body)):
                found.append((node.lineno, f"{name}:{node.lineno}: {memo}"))
    return [place for _, place in sorted(found)]


def test_the_finder_finds_the_old_shape() -> None:
    # The control: the shapes this module replaced are found, a bound that
    # stops adding (``if len(X) < N: X[k] = v``) or clears something else is not.
    old = (
        "def a(k):\n"
        "    if len(_memo) >= 4096:\n"
        "        _memo.clear()\n"
        "    _memo[k] = 1\n"
        "def b(self, k):\n"
        "    with lock:\n"
        "        if len(self._minutes) > 1024:  # recent minutes only\n"
        "            self._minutes.clear()\n"
        "def c(due):\n"
        "    if len(_active) + len(due) >= MAX:\n"
        "        _active.clear()\n"
    )
    assert emptied_when_full(old) == [
        "<source>:2: _memo",
        "<source>:7: self._minutes",
        "<source>:10: _active",
    ]
    fine = (
        "def d(k):\n"
        "    if len(_names) < 1024:\n"
        "        _names[k] = 1\n"
        "    if len(_memo) >= 10:\n"
        "        _other.clear()\n"
        "    if len(batch) >= 1000:\n"
        "        send(*batch)\n"
        "        batch.clear()\n"
    )
    assert emptied_when_full(fine) == []


def test_no_memo_is_emptied_whole_when_full() -> None:
    found = [
        place
        for path in sorted(ROOT.rglob("*.py"))
        for place in emptied_when_full(
            path.read_text(encoding="utf-8"), str(path.relative_to(ROOT.parent))
        )
    ]
    assert found == [], (
        "memos emptied whole when full (use a cachetools.LRUCache, or "
        "functools.lru_cache in the engine):\n" + "\n".join(found)
    )


# -- a full memo drops the entry used least lately, never the one just used ------------


def test_a_full_name_memo_keeps_the_name_used_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """``edge.team_caller._ids``: three names fill it; the first is asked
    again, then a fourth comes: the second goes, the first stays (emptied
    whole when full, the first was gone too)."""
    from curfew_core.edge import team_caller

    monkeypatch.setattr(team_caller, "_KEPT", 3)
    monkeypatch.setattr(team_caller, "_ids", LRUCache(maxsize=3))
    for user_id, name in enumerate(("alice", "bob", "carol"), start=1):
        team_caller._remember(7, name, user_id)
    assert team_caller._known_id(7, "alice") == (1, True)
    team_caller._remember(7, "dave", 4)
    assert team_caller._known_id(7, "alice") == (1, True)
    assert team_caller._known_id(7, "dave") == (4, True)
    assert team_caller._known_id(7, "bob") == (None, False)  # the least lately used
    assert len(team_caller._ids) == 3


def test_a_full_steady_memo_keeps_the_user_asked_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """``selectors.verdicts._steady``: a user asked again while it is full is
    still answered from it after another user comes, and never decided anew."""
    from curfew_core.engine import decide
    from curfew_core.selectors import verdicts
    from tests.api.test_answer_encoding import bundle
    from tests.api.test_steady_memo import PEAK

    asked: list[int] = []

    def counting(now: datetime, schedule: Any, *args: Any) -> Any:
        asked.append(now.second)
        return decide(now, schedule, *args)

    monkeypatch.setattr(verdicts, "decide", counting)
    monkeypatch.setattr(verdicts, "_STEADY_KEPT", 3)
    monkeypatch.setattr(verdicts, "_steady", LRUCache(maxsize=3))
    users = [dataclasses.replace(bundle({}), user_id=number) for number in range(4)]
    for user in users[:3]:
        verdicts.decide_for(user, now=PEAK)
    verdicts.decide_for(users[0], now=PEAK + timedelta(seconds=1))  # from the memo
    verdicts.decide_for(users[3], now=PEAK)
    assert len(asked) == 4
    again, _ = verdicts.decide_for(users[0], now=PEAK + timedelta(seconds=2))
    assert len(asked) == 4  # still answered from the memo
    assert again == decide(PEAK + timedelta(seconds=2), users[0].schedule)
    assert {user_id for user_id, _ in verdicts._steady} == {0, 3, 2}


def test_a_full_frame_memo_keeps_the_day_used_last() -> None:
    """``engine.decide._frames`` (an ``lru_cache``): a day asked again while it
    is full is still there after one more day was built."""
    decide_module = sys.modules["curfew_core.engine.decide"]
    schedule = Schedule()
    size = decide_module._FRAME_MEMO_SIZE
    first = decide_module._day(schedule, 700_000)
    second = decide_module._day(schedule, 700_001)
    for ordinal in range(700_002, 700_000 + size):
        decide_module._day(schedule, ordinal)
    assert decide_module._day(schedule, 700_000) is first  # used again, now the latest
    decide_module._day(schedule, 700_000 + size)  # one more: the least lately used goes
    assert decide_module._day(schedule, 700_000) is first
    assert decide_module._day(schedule, 700_001) is not second  # that was the second day
