"""``manage.py curfew team show``: each member's state and next change, as the engine says.

A surface of its own with no test until 2026-12-06, when it was read from
outside: it printed each next change as a UTC instant
(``2026-12-06T10:30:00+00:00``) where ``curfew status`` and the Team card say
the wall time (``18:30``). Each member's line is held here against the
engine: the state ``decide_for`` gives, and the next change ``curfew status``
names (``selectors.heads_up.next_change`` over the member's own outlook), on
the team's clock, which the header names.
"""

from __future__ import annotations

import io
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from curfew_core.engine.clock import to_wall
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.heads_up import next_change
from curfew_core.selectors.outlook import outlook_of
from curfew_core.selectors.verdicts import decide_for
from tests.teams.test_team_key_doors import team

__all__ = ["team"]


def _show(name: str) -> list[str]:
    out = io.StringIO()
    call_command("curfew", "team", "show", name, stdout=out)
    return out.getvalue().splitlines()


def test_each_members_line_is_the_engines_state_and_next_change(team: dict[str, Any]) -> None:
    lines = _show("acme")
    zone = ZoneInfo("Asia/Shanghai")  # the team's (TEAM_NIGHT names none: the default)
    assert lines[0] == "team acme: 2 member(s), times on the team's clock (Asia/Shanghai)"
    now = timezone.now()
    for name in ("alice", "boss"):
        (line,) = [line for line in lines[1:] if line.strip().startswith(f"{name} (")]
        bundle = bundle_for(User.objects.get(username=name).pk)
        verdict, _ = decide_for(bundle, now=now)
        assert f"): {verdict.state.value} — " in line, line
        change = next_change(outlook_of(bundle, now=now))
        assert change is not None
        wall = to_wall(change.at, zone).strftime("%Y-%m-%d %H:%M")
        assert line.endswith(f"; next {change.state.value} at {wall}"), line
    # Written out once: the team night holds both at lights-out; the team wakes
    # at 07:00, their own nights (the defaults) at 09:00, when peak hours begin.
    assert all(": lights-out — " in line for line in lines[1:]), lines
    assert all(line.endswith("; next off-duty at 2026-09-30 09:00") for line in lines[1:]), lines
