"""Release 2026-12-04's eleven migrations squashed into one (issue 43).

A new database gets the schema in one step; a database that applied the
eleven (any install of that release or later) takes the squashed one as
applied and goes on; a database that stopped part way is stopped by the
system check ``curfew_core.E001`` before ``migrate`` changes anything. That
the squashed schema is the very one the eleven made (SQLite and PostgreSQL)
was compared once by dumping both (docs/production.md, Upgrading); that the
models still match it is ``makemigrations --check``.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import OperationalError, connection
from django.db.migrations.recorder import MigrationRecorder

from curfew_core import checks
from curfew_testkit.server import ROOT

ELEVEN = checks.replaced()


def test_the_squash_stands_for_the_releases_eleven() -> None:
    assert len(ELEVEN) == 11
    assert ELEVEN[0] == "0001_initial"
    assert ELEVEN[-1] == "0011_decision_keyset_indexes"


@pytest.mark.parametrize(
    ("applied", "stopped"),
    [
        (set(), None),  # a new database
        (set(ELEVEN), None),  # release 2026-12-04 installed
        ({checks.SQUASHED, *ELEVEN}, None),  # this release's own
        ({checks.SQUASHED}, None),
        (set(ELEVEN[:8]), "0008_teams"),  # release 2026-12-02 installed
        (set(ELEVEN[:1]), "0001_initial"),
        (set(ELEVEN[:-1]), "0010_curve_positions"),
    ],
)
def test_which_databases_stopped_part_way(applied: set[str], stopped: str | None) -> None:
    assert checks.stopped_part_way(applied) == stopped


def _curfew_rows() -> set[str]:
    recorder = MigrationRecorder(connection)
    return {name for app, name in recorder.applied_migrations() if app == checks.APP}


@pytest.fixture
def recorder() -> Iterator[MigrationRecorder]:
    recorder = MigrationRecorder(connection)
    before = _curfew_rows()
    yield recorder
    # The rows as they were, for the tests after (the transaction rolls back
    # too; this is for a database without one).
    for name in _curfew_rows() - before:
        recorder.record_unapplied(checks.APP, name)
    for name in before - _curfew_rows():
        recorder.record_applied(checks.APP, name)


def _checked() -> list[str]:
    return [
        error.id or ""
        for error in run_checks(databases=["default"], include_deployment_checks=False)
    ]


@pytest.mark.django_db
def test_a_database_from_before_the_release_is_stopped_before_anything_changes(
    recorder: MigrationRecorder,
) -> None:
    assert "curfew_core.E001" not in _checked()  # control: this database is whole
    for name in (checks.SQUASHED, *ELEVEN[8:]):
        recorder.record_unapplied(checks.APP, name)
    rows = _curfew_rows()

    errors = [e for e in checks.upgraded_through_the_release(databases=["default"])]
    assert [e.id for e in errors] == ["curfew_core.E001"]
    assert "stopped at Curfew's migration 0008_teams" in errors[0].msg
    assert "Install release 2026-12-04 (commit c65df72)" in (errors[0].hint or "")
    with pytest.raises(SystemCheckError, match=r"curfew_core\.E001"):
        call_command("migrate", verbosity=0, skip_checks=False)  # as from the shell
    assert _curfew_rows() == rows  # nothing changed


def test_manage_py_migrate_stops_a_database_from_before_the_release(tmp_path: Path) -> None:
    """From the shell, as ``bin/serve prepare`` runs it: the check is registered
    by the app's start, not by this test's import, and stops ``migrate`` before
    it creates or changes a table."""
    path = tmp_path / "db.sqlite3"
    with sqlite3.connect(path) as db:  # release 2026-12-02's database, at 0008
        db.execute(
            "CREATE TABLE django_migrations (id integer NOT NULL PRIMARY KEY"
            " AUTOINCREMENT, app varchar(255) NOT NULL, name varchar(255) NOT NULL,"
            " applied datetime NOT NULL)"
        )
        db.executemany(
            "INSERT INTO django_migrations (app, name, applied) VALUES (?, ?, '2026-12-02')",
            [(checks.APP, name) for name in ELEVEN[:8]],
        )
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}", "CURFEW_DEBUG": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "curfew_core.E001" in done.stderr
    assert "stopped at Curfew's migration 0008_teams" in done.stderr
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        count = db.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
    assert tables - {"sqlite_sequence"} == {"django_migrations"}  # nothing made
    assert count == 8


def test_a_database_out_of_reach_is_left_to_migrate_to_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check says nothing of a database it cannot read (``migrate`` then
    fails on its connection as it always did), rather than crash the checks."""

    def unreachable(self: MigrationRecorder) -> bool:
        raise OperationalError("connection refused")

    monkeypatch.setattr(MigrationRecorder, "has_table", unreachable)
    assert checks.upgraded_through_the_release(databases=["default"]) == []


@pytest.mark.django_db
def test_a_database_of_the_release_takes_the_squash_as_applied(
    recorder: MigrationRecorder,
) -> None:
    recorder.record_unapplied(checks.APP, checks.SQUASHED)
    assert checks.SQUASHED not in _curfew_rows()
    assert "curfew_core.E001" not in _checked()

    call_command("migrate", verbosity=0, skip_checks=False)  # as from the shell

    assert checks.SQUASHED in _curfew_rows()
