"""The engine keeps its own defaults (it is stdlib-only and cannot read the
declaration); they must be the declared defaults, or a schedule built from an
empty config and the engine's bare ``Schedule()`` would decide differently."""

from __future__ import annotations

import dataclasses

from curfew_core.engine import Schedule
from curfew_core.schedules import config as schedule_config


def test_the_engines_defaults_are_the_declared_ones() -> None:
    built = schedule_config.build(schedule_config.default_config())
    bare = Schedule()
    # The holiday lookup is the calendar package's (the engine's default knows no
    # holidays by design); every other field must agree.
    differing = [
        field.name
        for field in dataclasses.fields(Schedule)
        if field.compare
        and field.name != "holidays"
        and getattr(built, field.name) != getattr(bare, field.name)
    ]
    assert differing == []
