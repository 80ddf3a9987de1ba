"""A served app's setup is what its commands would make: its ``migrate`` over
a new database file is a copy of the run's one migrated database
(``curfew_testkit.server.migrated_database``), which Django then finds up
to date, and its users work."""

from __future__ import annotations

from pathlib import Path

from curfew_testkit.server import ServedApp


def test_a_served_apps_first_migrate_leaves_nothing_to_apply(tmp_path: Path) -> None:
    app = ServedApp(tmp_path)
    app.manage("migrate", "--no-input", "-v0")
    assert (tmp_path / "db.sqlite3").is_file()
    plan = app.manage("showmigrations", "--plan").stdout
    assert "[X]" in plan, plan
    assert "[ ]" not in plan, plan
    app.manage("migrate", "--check")  # exits 1 when a migration is unapplied
    token = app.create_user("ada")
    assert token.startswith("cfw_")
    # Another app's copy is its own: the first one's user is not in it.
    other = ServedApp(tmp_path / "other")
    (tmp_path / "other").mkdir()
    other.manage("migrate", "--no-input", "-v0")
    users = other.manage(
        "shell", "-c", "from django.contrib.auth.models import User; print(User.objects.count())"
    )
    assert users.stdout.strip().splitlines()[-1] == "0"
