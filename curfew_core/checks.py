"""Curfew's own system checks, beside Django's.

``migrate`` runs the checks tagged ``database`` before it touches the
database (``bin/serve prepare`` and ``make run`` go through it), and so does
``manage.py check --database default``.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.core.checks import Error, Tags, register
from django.db import DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder

APP = "curfew_core"
#: The migration that stands for release 2026-12-04's eleven (issue 43).
SQUASHED = "0001_release_2026_12_04"
RELEASE = "2026-12-04"
#: The release's commit (``git checkout c65df72``); any later one before the
#: squash brings a database as far.
RELEASE_COMMIT = "c65df72"


def replaced() -> list[str]:
    """The names the squashed migration stands for, read from it."""
    module = importlib.import_module(f"{APP}.migrations.{SQUASHED}")
    return [name for app, name in module.Migration.replaces if app == APP]


def stopped_part_way(applied: set[str]) -> str | None:
    """The last migration a database stopped at when it applied some of the
    squashed ones but not all (an install of a release before 2026-12-04),
    or None when this release can migrate it: none applied (a new database),
    all of them, or the squashed one itself."""
    names = replaced()
    done = [name for name in names if name in applied]
    if not done or len(done) == len(names) or SQUASHED in applied:
        return None
    return done[-1]


@register(Tags.database)
def upgraded_through_the_release(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[Error]:
    """A database from before release 2026-12-04 is told to upgrade through
    it, before ``migrate`` could leave it half changed."""
    errors = []
    for alias in databases or ():
        recorder = MigrationRecorder(connections[alias])
        try:
            if not recorder.has_table():
                continue
            applied = {name for app, name in recorder.applied_migrations() if app == APP}
        except DatabaseError:
            # Unreachable: not this check's to say; ``migrate`` reports it as
            # it would without Curfew.
            continue
        last = stopped_part_way(applied)
        if last is not None:
            errors.append(
                Error(
                    f"The database {alias!r} stopped at Curfew's migration {last}, from a"
                    f" release before {RELEASE}; this release no longer carries the"
                    " migrations from there on (they are squashed into"
                    f" {SQUASHED}). Nothing was changed.",
                    hint=(
                        f"Install release {RELEASE} (commit {RELEASE_COMMIT}), run"
                        " `bin/serve prepare` (or `manage.py migrate`) with it, then"
                        " install this release and run it again (CHANGELOG.md, Upgrading)."
                    ),
                    id="curfew_core.E001",
                )
            )
    return errors
