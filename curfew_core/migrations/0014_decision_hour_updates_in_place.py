from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

#: Of each page of ``DecisionHour`` filled by inserts, the share PostgreSQL
#: fills (the rest is room for the rows' updates to stay on their page).
FILLFACTOR = 70


def _table(apps: Any) -> str:
    return str(apps.get_model("curfew_core", "DecisionHour")._meta.db_table)


def leave_room(apps: Any, schema_editor: Any) -> None:
    """PostgreSQL only (SQLite has no such setting). New pages only: a table
    of many pages is not rewritten by this (``VACUUM FULL`` would, holding
    it locked), its next hours' rows get the room."""
    if schema_editor.connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(_table(apps))
    schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {FILLFACTOR})")


def fill_pages(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"ALTER TABLE {schema_editor.quote_name(_table(apps))} RESET (fillfactor)"
    )


class Migration(migrations.Migration):
    """The hourly aggregates take an update a user a flush (at 10,000 users,
    about one a verdict, issue 40): updated in place where PostgreSQL can.
    The index of ``user`` alone goes (the unique constraint's index leads
    with it, and serves every read by user); each page keeps room for its
    rows' updates (``FILLFACTOR``), so an update with no indexed column
    changed stays on its page and writes no index (a heap-only update).
    Beside ``bench.cold_path``'s 5,000 members in turn this took about a
    third off PostgreSQL's CPU a verdict."""

    # The user model is 0013's dependency already.
    dependencies = [("curfew_core", "0013_stored_response_owner")]

    operations = [
        migrations.AlterField(
            model_name="decisionhour",
            name="user",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="curfew_decision_hours",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(leave_room, fill_pages),
    ]
