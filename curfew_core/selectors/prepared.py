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
from django.utils.asyncio import async_unsafe


def prepares(connection: BaseDatabaseWrapper) -> bool:
    """Whether ``connection`` keeps the statements ``cursor`` runs prepared."""
    return (
        connection.vendor == "postgresql"
        and connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is not None
    )


@async_unsafe
def cursor(connection: BaseDatabaseWrapper) -> Any:
    """A cursor of ``connection`` binding on the server, so its statements
    are prepared (``prepares``); elsewhere ``connection.cursor()``. Made as
    Django's own ``connection.cursor()`` makes one (``_cursor``: the health
    check, the connection, the wrapper), with psycopg's server-binding cursor
    where ``create_cursor`` would give the connection's client-binding one."""
    if not prepares(connection):
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    # Untyped: django-stubs give ``ServerBindingCursor`` no arguments and
    # leave ``_prepare_cursor`` out.
    factory: Any = ServerBindingCursor
    django: Any = connection
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return django._prepare_cursor(factory(connection.connection))
