"""A cursor whose statements PostgreSQL plans once a connection (issue 40).

Django binds parameters in the client, so PostgreSQL receives every query as
new text and plans it again; it keeps no prepared statements unless asked
(``prepare_threshold``, off by default for the sake of poolers). The cold
path's one query joins seven tables: PostgreSQL took about 2 ms to plan it and
0.1 ms to run it (``bench.cold_path``'s tables, analysed). ``cursor`` binds on
the server instead, and with ``CURFEW_DATABASE_PREPARED`` (the settings turn
it into the connection's ``prepare_threshold`` of 0) psycopg prepares each
statement on its first run on a connection and runs the prepared one after.

Only queries asked through ``cursor`` are prepared: Django's own cursors bind
in the client, which psycopg never prepares. The cursor is Django's wrapper,
so what wraps every query (``connection.execute_wrapper``, the debug log,
``assertNumQueries``) sees these too.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper


def prepares(connection: BaseDatabaseWrapper) -> bool:
    """Whether ``connection`` keeps the statements ``cursor`` runs prepared."""
    return (
        connection.vendor == "postgresql"
        and connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is not None
    )


def cursor(connection: BaseDatabaseWrapper) -> Any:
    """A cursor of ``connection`` binding on the server, so its statements
    are prepared (``prepares``); elsewhere ``connection.cursor()``."""
    if not prepares(connection):
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    # psycopg's own cursor, which binds on the server (django-stubs types it
    # with no arguments, and ``make_cursor`` as taking Django's wrapper).
    factory: Any = ServerBindingCursor
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = factory(connection.connection)
    if connection.queries_logged:
        return connection.make_debug_cursor(raw)
    return connection.make_cursor(raw)
